import type { AuditEntry } from '../store.js';
import type { StatementCache } from './statement-cache.js';

const INSERT_AUDIT = 'INSERT INTO audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at) VALUES (?, ?, ?, ?, ?, ?, ?)';

/** Appends one audit entry (inside the caller's transaction, when there is one). */
export function insertAudit(statements: StatementCache, entry: AuditEntry): void {
  statements
    .get(INSERT_AUDIT)
    .run(entry.tenantId, entry.actor, entry.operation, entry.resourceId ?? null, entry.outcome, entry.detail ?? null, entry.at);
}
