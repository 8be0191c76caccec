import type { AccessRule, ApplicationType, Permission } from '../../permissions/permissions.js';
import type { ApplicationRecord, IdempotencyRecord, StoredAuditEntry, TenantRecord, WrappedKeyRecord } from '../store.js';

// Rows of the non-token tables as the store's type parsers return them (json parsed, bigint as
// number, bytea as Buffer), and their mapping to the Store's records.

type Row = Record<string, unknown>;

export const toTenant = (row: Row): TenantRecord => ({ id: row['id'] as string, name: row['name'] as string, createdAt: row['created_at'] as number });

export const toWrappedKey = (row: Row): WrappedKeyRecord => ({
  tenantId: row['tenant_id'] as string,
  purpose: row['purpose'] as 'data' | 'index',
  version: row['version'] as number,
  wrapped: row['wrapped'] as Buffer,
  createdAt: row['created_at'] as number,
});

export const APPLICATION_COLUMNS =
  't.seq, t.tenant_id, t.id, t.name, t.type, t.permissions, t.rules, t.created_by, t.created_at, t.modified_by, t.modified_at, t.credentials_generation, t.allowed_origins';
export const toApplication = (row: Row): ApplicationRecord => ({
  id: row['id'] as string,
  tenantId: row['tenant_id'] as string,
  name: row['name'] as string,
  type: row['type'] as ApplicationType,
  permissions: row['permissions'] as Permission[],
  rules: row['rules'] as AccessRule[],
  createdBy: row['created_by'] as string | null,
  createdAt: row['created_at'] as number,
  modifiedBy: row['modified_by'] as string | null,
  modifiedAt: row['modified_at'] as number | null,
  credentialsGeneration: row['credentials_generation'] as number,
  allowedOrigins: row['allowed_origins'] as string[],
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
