import type { AccessRule, ApplicationType, Permission } from '../../permissions/permissions.js';
import type { ApplicationRecord } from '../store.js';
import type { Dialect } from '../sql/dialect.js';
import type { Row } from '../sql/operation.js';
import { raw } from '../sql/sql.js';

// An application row as both stores read it (the applications area, and the credentials area's key lookup, which joins it).

const NAMES = [
  'seq',
  'tenant_id',
  'id',
  'name',
  'type',
  'permissions',
  'rules',
  'created_by',
  'created_at',
  'modified_by',
  'modified_at',
  'credentials_generation',
  'allowed_origins',
];
/** The columns of an application row, of alias `t` (joins and lists). */
export const APPLICATION_COLUMNS = raw(NAMES.map((name) => `t.${name}`).join(', '));
/** The same unqualified (RETURNING). */
export const APPLICATION_RETURNED = NAMES.join(', ');

export const toApplication = (d: Dialect, row: Row): ApplicationRecord => ({
  id: row['id'] as string,
  tenantId: row['tenant_id'] as string,
  name: row['name'] as string,
  type: row['type'] as ApplicationType,
  permissions: d.json<Permission[]>(row['permissions']),
  rules: d.json<AccessRule[]>(row['rules']),
  createdBy: row['created_by'] as string | null,
  createdAt: row['created_at'] as number,
  modifiedBy: row['modified_by'] as string | null,
  modifiedAt: row['modified_at'] as number | null,
  credentialsGeneration: row['credentials_generation'] as number,
  allowedOrigins: d.json<string[]>(row['allowed_origins']),
});
