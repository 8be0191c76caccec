import type { ApplicationView } from '../applications/application-service.js';
import { type OperatorAudit, operatorAudit } from '../audit/audit-operator.js';
import type { Clock } from '../common/clock.js';
import type { KeyRing } from '../crypto/key-ring.js';
import type { Store, TenantRecord } from '../storage/store.js';
import type { TenantSetup } from '../tenants/tenant-setup.js';

export interface ReencryptProgress {
  tenantId: string;
  done: number;
  total: number;
}

/** Key management: rotation and re-encryption to the newest key. */
export interface OperatorKeys {
  /** Makes a new data key for the tenant; new writes use it and older data stays readable. Returns its version. */
  rotate(tenantId: string): Promise<number>;
  /**
   * Whether the master key (or key provider) unwraps every stored key of the tenant. Reads only:
   * checks never create keys.
   */
  verify(tenantId: string): Promise<boolean>;
  /**
   * Counts the tenant's tokens and decrypts up to `sample` of them (a restored backup opened with
   * its master key: `tokenvault verify`). Reads only; a token that cannot be decrypted throws.
   */
  check(tenantId: string, sample: number): Promise<{ tokens: number; sampled: string[] }>;
  /** Re-encrypts the tenant's tokens under its newest data key, reporting progress after each batch. */
  reencrypt(tenantId: string, options?: { batchSize?: number; onProgress?: (progress: ReencryptProgress) => void }): Promise<number>;
}

/**
 * What the operator (who holds the store and the master key) does outside any tenant's grants.
 * None of it takes a Caller, so none of it is on the `Vault`: it comes from `openOperator`
 * (`tokenvault/operator`, docs/operations.md), never from a vault object.
 */
export interface OperatorTools {
  readonly keys: OperatorKeys;
  /** Verification and export of the audit trail (docs/audit.md). */
  readonly audit: OperatorAudit;
  /** Every tenant of the database (ids and names). */
  listTenants(): Promise<TenantRecord[]>;
  /**
   * For an operator who lost every administrator key: creates a new management application in the
   * tenant and returns it with its key (shown once). Audited as `application:recover` by
   * `operator`. There is no HTTP route to it (`tokenvault recover-admin` runs it).
   */
  recoverAdministrator(tenantId: string, input?: { name?: string }): Promise<ApplicationView & { key: string }>;
}

/** The operator tools over a vault's own key ring, store and tenant setup (createVault's wiring). */
export function createOperatorTools(keyRing: KeyRing, store: Store, setup: TenantSetup, clock: Clock): OperatorTools {
  return Object.freeze({
    keys: Object.freeze(operatorKeys(keyRing, store)),
    audit: operatorAudit(keyRing, store, clock),
    listTenants: () => store.listTenants(),
    recoverAdministrator: (tenantId: string, input?: { name?: string }) => setup.recoverAdministrator(tenantId, input),
  });
}

/** Above every data key version (an INTEGER column). */
const ALL_VERSIONS = 2_147_483_647;

function operatorKeys(keyRing: KeyRing, store: Store): OperatorKeys {
  return {
    rotate: (tenantId) => keyRing.rotate(tenantId),
    verify: (tenantId) => keyRing.verify(tenantId),
    async check(tenantId, sample) {
      // Every token is below the largest key version.
      const tokens = await store.countTokensBelowKeyVersion(tenantId, ALL_VERSIONS);
      const sampled: string[] = [];
      for (const token of sample > 0 ? await store.listTokensBelowKeyVersion(tenantId, ALL_VERSIONS, sample) : []) {
        await keyRing.decrypt(tenantId, token.id, token.ciphertext);
        sampled.push(token.id);
      }
      return { tokens, sampled };
    },
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
