import type { DeletedTokenRecord, StoredAuditEntry } from '../store.js';

// Rows as better-sqlite3 returns them, and their mapping to the Store's records.

export interface DeletedTokenRow {
  tenant_id: string;
  id: string;
  type: string;
  deleted_at: number;
  deleted_by: string;
}
export const toDeletedToken = (row: DeletedTokenRow): DeletedTokenRecord => ({
  tenantId: row.tenant_id,
  id: row.id,
  type: row.type,
  deletedAt: row.deleted_at,
  deletedBy: row.deleted_by,
});

export const AUDIT_COLUMNS = 't.seq, t.tenant_id, t.actor, t.operation, t.resource_id, t.outcome, t.detail, t.at';
export interface AuditRow {
  seq: number;
  tenant_id: string;
  actor: string;
  operation: string;
  resource_id: string | null;
  outcome: 'success' | 'failure';
  detail: string | null;
  at: number;
}
export const toAudit = (row: AuditRow): StoredAuditEntry => ({
  seq: row.seq,
  tenantId: row.tenant_id,
  actor: row.actor,
  operation: row.operation,
  resourceId: row.resource_id,
  outcome: row.outcome,
  detail: row.detail,
  at: row.at,
});
