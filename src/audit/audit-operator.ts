import type { Clock } from '../common/clock.js';
import type { KeyRing } from '../crypto/key-ring.js';
import type { Store } from '../storage/store.js';
import { exportAudit } from './audit-export.js';
import { type TenantAuditVerification, verifyTenantAudit } from './audit-verify.js';

/** The audit trail's operator tools (`tokenvault audit`, docs/audit.md). */
export interface OperatorAudit {
  /** Verifies every tenant's chain (or one tenant's); see verifyTenantAudit. */
  verify(options?: { tenantId?: string; pendingGraceMs?: number }): Promise<TenantAuditVerification[]>;
  /** Writes the entries from `since` (epoch ms) as JSON lines; answers how many. */
  export(since: number, write: (line: string) => void | Promise<void>): Promise<number>;
}

export function operatorAudit(keyRing: KeyRing, store: Store, clock: Clock): OperatorAudit {
  const auditKey = async (tenantId: string) => (await keyRing.keysFor(tenantId)).auditKey;
  return Object.freeze({
    async verify(options: { tenantId?: string; pendingGraceMs?: number } = {}) {
      const tenants = options.tenantId === undefined ? await store.auditTenants() : [options.tenantId];
      const out: TenantAuditVerification[] = [];
      for (const tenantId of tenants) {
        out.push(
          await verifyTenantAudit(store, tenantId, { auditKey, now: clock.now(), ...(options.pendingGraceMs === undefined ? {} : { pendingGraceMs: options.pendingGraceMs }) }),
        );
      }
      return out;
    },
    export: (since: number, write: (line: string) => void | Promise<void>) => exportAudit(store, since, write),
  });
}
