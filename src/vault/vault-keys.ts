import type { KeyRing } from '../crypto/key-ring.js';
import type { Store } from '../storage/store.js';

export interface ReencryptProgress {
  tenantId: string;
  done: number;
  total: number;
}

/** Key management: rotation and re-encryption to the newest key. */
export interface VaultKeys {
  /** Makes a new data key for the tenant; new writes use it and older data stays readable. Returns its version. */
  rotate(tenantId: string): Promise<number>;
  /**
   * Encrypts a record that is not a token (e.g. stored idempotent results) with the
   * tenant's newest data key, bound to `context`; openRecord decrypts it with the same context.
   */
  sealRecord(tenantId: string, context: readonly string[], plaintext: Buffer): Promise<Buffer>;
  openRecord(tenantId: string, context: readonly string[], ciphertext: Uint8Array): Promise<Buffer>;
  /**
   * Whether the master key (or key provider) unwraps every stored key of the tenant. Reads only:
   * checks never create keys.
   */
  verify(tenantId: string): Promise<boolean>;
  /** Re-encrypts the tenant's tokens under its newest data key, reporting progress after each batch. */
  reencrypt(tenantId: string, options?: { batchSize?: number; onProgress?: (progress: ReencryptProgress) => void }): Promise<number>;
}

/** The vault's key management over its key ring. */
export function createVaultKeys(keyRing: KeyRing, store: Store): VaultKeys {
  return {
    rotate: (tenantId) => keyRing.rotate(tenantId),
    sealRecord: (tenantId, context, plaintext) => keyRing.sealRecord(tenantId, context, plaintext),
    openRecord: (tenantId, context, ciphertext) => keyRing.openRecord(tenantId, context, ciphertext),
    verify: (tenantId) => keyRing.verify(tenantId),
    async reencrypt(tenantId, { batchSize = 500, onProgress } = {}) {
      const tenantKeys = await keyRing.keysFor(tenantId);
      const target = tenantKeys.current;
      const total = await store.countTokensBelowKeyVersion(tenantId, target);
      let done = 0;
      for (;;) {
        const batch = await store.listTokensBelowKeyVersion(tenantId, target, batchSize);
        if (batch.length === 0) break;
        for (const token of batch) {
          const plaintext = await keyRing.decrypt(tenantId, token.id, token.ciphertext);
          const next = keyRing.encrypt(await keyRing.keysFor(tenantId), tenantId, token.id, plaintext);
          // Compare-and-set: a token updated meanwhile is already under the newest key.
          await store.replaceCiphertext(tenantId, token.id, token.ciphertext, { ...next, cvcPurgeAt: token.cvcPurgeAt });
          done++;
        }
        onProgress?.({ tenantId, done: Math.min(done, total), total });
      }
      return done;
    },
  };
}
