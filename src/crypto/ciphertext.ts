/**
 * The ciphertext format of the key ring (key-ring.ts): a format byte, the data key version (u32 BE),
 * a 96-bit IV, the GCM tag, then the body; and the additional data that binds a ciphertext to its
 * token or record.
 */
import { createDecipheriv, randomFillSync } from 'node:crypto';

export const FORMAT = 1;
export const HEADER = 1 + 4 + 12 + 16;

/** What decrypting needs of a tenant's keys: its data keys by version. */
interface DataKeys {
  data: Map<number, Buffer>;
}

/**
 * 96-bit random IVs, drawn from a pool refilled 512 at a time: one randomFillSync per 512
 * encryptions instead of one randomBytes call each, whose fixed cost is most of an IV's
 * (docs/performance.md, "Figures behind the code's choices"). Random
 * IVs under one key stay far below the 2^32 GCM limit between rotations for any realistic vault.
 */
const IV_POOL = Buffer.allocUnsafe(12 * 512);
let ivOffset = IV_POOL.length;
export function nextIv(target: Buffer): Buffer {
  if (ivOffset === IV_POOL.length) {
    randomFillSync(IV_POOL);
    ivOffset = 0;
  }
  IV_POOL.copy(target, 0, ivOffset, ivOffset + 12);
  ivOffset += 12;
  return target;
}

/** Binds the ciphertext to its tenant and token id, so rows cannot be swapped between tokens or tenants. */
export function aad(tenantId: string, tokenId: string): Buffer {
  return Buffer.from(`${tenantId}\u0000${tokenId}`, 'utf8');
}

export function versionOf(ciphertext: Uint8Array): number {
  if (ciphertext.byteLength < HEADER || ciphertext[0] !== FORMAT) throw new Error('Unrecognized ciphertext format');
  return asBuffer(ciphertext).readUInt32BE(1);
}

/** Stores hand back Buffers already; other Uint8Arrays get a Buffer view (no copy). */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * AAD of a record other than a token: the JSON text of ["record", tenant, ...context]. A token's AAD
 * (aad above) always holds a NUL byte and JSON text never does (it escapes U+0000), so the two
 * domains cannot collide; JSON's quoting keeps the context's parts from running into each other.
 */
export function recordAad(tenantId: string, context: readonly string[]): Buffer {
  return Buffer.from(JSON.stringify(['record', tenantId, ...context]), 'utf8');
}

export function decryptWith(keys: DataKeys, tenantId: string, tokenId: string, ciphertext: Uint8Array): Buffer {
  return decryptWithAad(keys, aad(tenantId, tokenId), ciphertext);
}

export function decryptWithAad(keys: DataKeys, additional: Buffer, ciphertext: Uint8Array): Buffer {
  const buf = asBuffer(ciphertext);
  const key = keys.data.get(buf.readUInt32BE(1));
  if (!key) throw new Error('Unknown data key version');
  const decipher = createDecipheriv('aes-256-gcm', key, buf.subarray(5, 17));
  decipher.setAAD(additional);
  decipher.setAuthTag(buf.subarray(17, HEADER));
  const plaintext = decipher.update(buf.subarray(HEADER));
  // GCM emits everything in update(); final() only verifies the tag (and throws if it is wrong).
  decipher.final();
  return plaintext;
}
