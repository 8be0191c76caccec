import type { StoredAuditEntry } from '../store.js';

// Rows of the non-token tables as the store's type parsers return them (json parsed, bigint as
// number, bytea as Buffer), and their mapping to the Store's records.

type Row = Record<string, unknown>;

export const AUDIT_COLUMNS = 't.seq, t.tenant_id, t.actor, t.operation, t.resource_id, t.outcome, t.detail, t.at';
export const toAudit = (row: Row): StoredAuditEntry => ({
  seq: row['seq'] as number,
  tenantId: row['tenant_id'] as string,
  actor: row['actor'] as string,
  operation: row['operation'] as string,
  resourceId: row['resource_id'] as string | null,
  outcome: row['outcome'] as 'success' | 'failure',
  detail: row['detail'] as string | null,
  at: row['at'] as number,
});
