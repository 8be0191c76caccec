import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ValidationError } from '../errors/errors.js';

/**
 * Wraps and unwraps tenant keys. The default is a local 32-byte master key; a KMS-backed provider
 * implements the same two calls. `context` is bound into the wrapping (as AAD for the local
 * provider) so a wrapped key cannot be moved to another tenant or purpose.
 */
export interface KeyProvider {
  wrap(key: Uint8Array, context: string): Uint8Array | Promise<Uint8Array>;
  /**
   * The key, in bytes the caller then owns: the key ring keeps them as they are and overwrites them
   * when it forgets them (a seal), so a provider answers a fresh buffer and keeps no copy of its own.
   */
  unwrap(wrapped: Uint8Array, context: string): Uint8Array | Promise<Uint8Array>;
  /**
   * Optional. Throws a 503 (KeyProviderUnavailableError, SealedError) while the provider cannot
   * serve. The key ring calls it before each use of the tenant keys it holds unwrapped, so an HSM
   * that went away, or a seal, stops reads of cached tenants too. Synchronous and cheap: a provider
   * that probes a device does so on its own schedule.
   */
  check?(): void;
  /** Optional. Readiness (`/readyz`): resolves when the provider can wrap and unwrap now. */
  ready?(): Promise<void>;
  /** Optional. `listener` is called when the keys unwrapped so far must leave memory (a seal). */
  onRevoke?(listener: () => void): void;
  /** Optional. Releases what the provider holds (a PKCS#11 session); called by vault.close(). */
  close?(): void | Promise<void>;
}

const WRAP_VERSION = 1;

/**
 * AES-256-GCM key wrapping with a local master key.
 * @example new LocalKeyProvider(process.env.TOKENVAULT_MASTER_KEY) // base64 of 32 bytes
 */
export class LocalKeyProvider implements KeyProvider {
  #master: Buffer;

  constructor(masterKey: Uint8Array | string) {
    this.#master = decodeMasterKey(masterKey);
  }

  wrap(key: Uint8Array, context: string): Uint8Array {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#master, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(key), cipher.final()]);
    return Buffer.concat([Buffer.from([WRAP_VERSION]), iv, cipher.getAuthTag(), body]);
  }

  /** Overwrites the master key in memory (a seal); the provider is unusable afterwards. */
  destroy(): void {
    this.#master.fill(0);
  }

  unwrap(wrapped: Uint8Array, context: string): Uint8Array {
    const buf = Buffer.from(wrapped.buffer, wrapped.byteOffset, wrapped.byteLength);
    if (buf[0] !== WRAP_VERSION || buf.length < 29) throw new Error('Unrecognized wrapped key format');
    const decipher = createDecipheriv('aes-256-gcm', this.#master, buf.subarray(1, 13));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(buf.subarray(13, 29));
    // GCM answers the whole plaintext from update(); final() only checks the tag. The one buffer is
    // handed over (no concatenated copy left behind holding the key), or wiped when the tag fails.
    const key = decipher.update(buf.subarray(29));
    try {
      decipher.final();
      return key;
    } catch {
      key.fill(0);
      // Never echo key material; the usual cause is opening a database with another master key.
      throw new Error('Could not unwrap a tenant key: the master key does not match the one this database was created with');
    }
  }
}

/** Accepts 32 raw bytes or their base64 (standard or url-safe). */
export function decodeMasterKey(value: Uint8Array | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value.trim(), 'base64') : Buffer.from(value);
  if (bytes.length !== 32) {
    throw new ValidationError('masterKey', 'The master key must be 32 bytes (give the bytes, or their base64: `openssl rand -base64 32`)');
  }
  return bytes;
}

/** A fresh random master key, base64-encoded (for tests, ephemeral vaults and key files). */
export function generateMasterKey(): string {
  return randomBytes(32).toString('base64');
}
