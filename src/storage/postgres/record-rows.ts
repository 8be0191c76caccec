import type { SessionGrants, FormulaRecord, ReactorRecord, StoredAuditEntry } from '../store.js';

// Rows of the non-token tables as the store's type parsers return them (json parsed, bigint as
// number, bytea as Buffer), and their mapping to the Store's records.

type Row = Record<string, unknown>;

export const FORMULA_COLUMNS =
  't.seq, t.tenant_id, t.id, t.name, t.description, t.code, t.configuration, t.request_parameters, t.created_by, t.created_at, t.modified_by, t.modified_at';
export const toFormula = (row: Row): FormulaRecord => ({
  id: row['id'] as string,
  tenantId: row['tenant_id'] as string,
  name: row['name'] as string,
  description: row['description'] as string | null,
  code: row['code'] as string,
  configuration: row['configuration'] as FormulaRecord['configuration'],
  requestParameters: row['request_parameters'] as FormulaRecord['requestParameters'],
  createdBy: row['created_by'] as string | null,
  createdAt: row['created_at'] as number,
  modifiedBy: row['modified_by'] as string | null,
  modifiedAt: row['modified_at'] as number | null,
});

export const REACTOR_COLUMNS =
  't.seq, t.tenant_id, t.id, t.name, t.formula_id, t.code, t.configuration, t.application_id, t.bound_grants, t.created_by, t.created_at, t.modified_by, t.modified_at';
export const toReactor = (row: Row): ReactorRecord => ({
  id: row['id'] as string,
  tenantId: row['tenant_id'] as string,
  name: row['name'] as string,
  formulaId: row['formula_id'] as string | null,
  code: row['code'] as string | null,
  configuration: row['configuration'] as Record<string, unknown>,
  applicationId: row['application_id'] as string | null,
  boundGrants: (row['bound_grants'] ?? null) as SessionGrants | null,
  createdBy: row['created_by'] as string | null,
  createdAt: row['created_at'] as number,
  modifiedBy: row['modified_by'] as string | null,
  modifiedAt: row['modified_at'] as number | null,
});

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
