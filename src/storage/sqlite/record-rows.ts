import type { ApplicationType, AccessRule, Permission } from '../../permissions/permissions.js';
import type { ApplicationRecord, DeletedTokenRecord, IdempotencyRecord, StoredAuditEntry, TenantRecord, WrappedKeyRecord } from '../store.js';

// Rows as better-sqlite3 returns them, and their mapping to the Store's records.

export interface TenantRow {
  id: string;
  name: string;
  created_at: number;
}
export const toTenant = (row: TenantRow): TenantRecord => ({ id: row.id, name: row.name, createdAt: row.created_at });

export interface WrappedKeyRow {
  tenant_id: string;
  purpose: 'data' | 'index';
  version: number;
  wrapped: Buffer;
  created_at: number;
}
export const toWrappedKey = (row: WrappedKeyRow): WrappedKeyRecord => ({
  tenantId: row.tenant_id,
  purpose: row.purpose,
  version: row.version,
  wrapped: row.wrapped,
  createdAt: row.created_at,
});

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

export const APPLICATION_COLUMNS =
  't.seq, t.tenant_id, t.id, t.name, t.type, t.permissions, t.rules, t.created_by, t.created_at, t.modified_by, t.modified_at, t.credentials_generation, t.allowed_origins';
export interface ApplicationRow {
  seq: number;
  tenant_id: string;
  id: string;
  name: string;
  type: ApplicationType;
  permissions: string;
  rules: string;
  created_by: string | null;
  created_at: number;
  modified_by: string | null;
  modified_at: number | null;
  credentials_generation: number;
  allowed_origins: string;
}
export const toApplication = (row: ApplicationRow): ApplicationRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  name: row.name,
  type: row.type,
  permissions: JSON.parse(row.permissions) as Permission[],
  rules: JSON.parse(row.rules) as AccessRule[],
  createdBy: row.created_by,
  createdAt: row.created_at,
  modifiedBy: row.modified_by,
  modifiedAt: row.modified_at,
  credentialsGeneration: row.credentials_generation,
  allowedOrigins: JSON.parse(row.allowed_origins) as string[],
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
