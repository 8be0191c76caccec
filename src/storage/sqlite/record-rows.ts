import type { SessionGrants, DeletedTokenRecord, FormulaRecord, ReactorRecord, StoredAuditEntry } from '../store.js';

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

export const FORMULA_COLUMNS =
  't.seq, t.tenant_id, t.id, t.name, t.description, t.code, t.configuration, t.request_parameters, t.created_by, t.created_at, t.modified_by, t.modified_at';
export interface FormulaRow {
  seq: number;
  tenant_id: string;
  id: string;
  name: string;
  description: string | null;
  code: string;
  configuration: string;
  request_parameters: string;
  created_by: string | null;
  created_at: number;
  modified_by: string | null;
  modified_at: number | null;
}
export const toFormula = (row: FormulaRow): FormulaRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  name: row.name,
  description: row.description,
  code: row.code,
  configuration: JSON.parse(row.configuration) as FormulaRecord['configuration'],
  requestParameters: JSON.parse(row.request_parameters) as FormulaRecord['requestParameters'],
  createdBy: row.created_by,
  createdAt: row.created_at,
  modifiedBy: row.modified_by,
  modifiedAt: row.modified_at,
});

export const REACTOR_COLUMNS =
  't.seq, t.tenant_id, t.id, t.name, t.formula_id, t.code, t.configuration, t.application_id, t.bound_grants, t.created_by, t.created_at, t.modified_by, t.modified_at';
export interface ReactorRow {
  seq: number;
  tenant_id: string;
  id: string;
  name: string;
  /** '' when the reactor has inline code (migrations.ts). */
  formula_id: string;
  code: string | null;
  configuration: string;
  application_id: string | null;
  bound_grants: string | null;
  created_by: string | null;
  created_at: number;
  modified_by: string | null;
  modified_at: number | null;
}
export const toReactor = (row: ReactorRow): ReactorRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  name: row.name,
  formulaId: row.formula_id === '' ? null : row.formula_id,
  code: row.code,
  configuration: JSON.parse(row.configuration) as Record<string, unknown>,
  applicationId: row.application_id,
  boundGrants: row.bound_grants === null ? null : (JSON.parse(row.bound_grants) as SessionGrants),
  createdBy: row.created_by,
  createdAt: row.created_at,
  modifiedBy: row.modified_by,
  modifiedAt: row.modified_at,
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
