import type { AuditLog, AuditKeySource } from './audit.js';
import type { Store } from '../storage/store.js';
import { chainSealer } from './audit-chain.js';

/**
 * The audit concern of the sweep: seals every tenant's entries still unsealed (a token write's
 * entry whose instance stopped before its flush), then, with a retention set, removes each tenant's
 * entries older than it behind a checkpoint (docs/audit.md). Answers the entries removed.
 */
export async function sweepAudit(deps: { store: Store; audit: AuditLog; auditKey: AuditKeySource; retentionMs: number | undefined }, now: number): Promise<number> {
  const tenants = await deps.store.auditTenants();
  await deps.audit.seal(tenants);
  if (deps.retentionMs === undefined) return 0;
  const before = now - deps.retentionMs;
  let removed = 0;
  for (const tenantId of tenants) {
    const keys = new Map([[tenantId, await deps.auditKey(tenantId)]]);
    removed += await deps.store.pruneAudit(tenantId, before, chainSealer(keys, [tenantId], now));
  }
  return removed;
}
