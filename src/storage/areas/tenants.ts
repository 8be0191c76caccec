import { InternalError } from '../../errors/errors.js';
import type { Inserted, TenantRecord, WrappedKeyRecord } from '../store.js';
import { operation, query, type AreaOperations, type Row, type Steps } from '../sql/operation.js';
import { sql, table } from '../sql/sql.js';
import { insertApplication } from './applications.js';

const TENANTS = table('tenants');
const WRAPPED_KEYS = table('wrapped_keys');

const toTenant = (row: Row): TenantRecord => ({ id: row['id'] as string, name: row['name'] as string, createdAt: row['created_at'] as number });

const toWrappedKey = (row: Row): WrappedKeyRecord => ({
  tenantId: row['tenant_id'] as string,
  purpose: row['purpose'] as 'data' | 'index',
  version: row['version'] as number,
  wrapped: row['wrapped'] as Buffer,
  createdAt: row['created_at'] as number,
});

/** Inserts use ON CONFLICT DO NOTHING and report "exists" from the row count, so a racing duplicate is an answer, not an aborted statement. */
export const TENANTS_SQL = {
  insertTenant: sql`INSERT INTO ${TENANTS} (id, name, created_at) VALUES (${1}, ${2}, ${3}) ON CONFLICT DO NOTHING`,
  getTenant: sql`SELECT id, name, created_at FROM ${TENANTS} WHERE id = ${1}`,
  listTenants: sql`SELECT id, name, created_at FROM ${TENANTS} ORDER BY seq`,
  insertWrappedKey: sql`INSERT INTO ${WRAPPED_KEYS} (tenant_id, purpose, version, wrapped, created_at) VALUES (${1}, ${2}, ${3}, ${4}, ${5}) ON CONFLICT DO NOTHING`,
  listWrappedKeys: sql`SELECT tenant_id, purpose, version, wrapped, created_at FROM ${WRAPPED_KEYS} WHERE tenant_id = ${1} AND purpose = ${2} ORDER BY version`,
};

const SQL = TENANTS_SQL;

/** A clash inside a tenant being created: the caller gave two records one key (a bug, not input). */
function duplicateInitial(what: string, id: string): InternalError {
  return new InternalError(`createTenant was given a ${what} twice (${id}); nothing was written`);
}

function* insertWrappedKey(key: WrappedKeyRecord): Steps<boolean> {
  return (yield query(SQL.insertWrappedKey, key.tenantId, key.purpose, key.version, key.wrapped, key.createdAt)).changes === 1;
}

/** Tenants and their wrapped keys (store-parts.ts, area `tenants`). */
export const TENANTS_AREA: AreaOperations<'tenants'> = {
  /** 'exists' when the tenant id is taken. With `initial`: one transaction (see Store). */
  createTenant: operation(
    (_d, _tenant, initial) => (initial === undefined ? 'statement' : 'write'),
    function* (_d, tenant, initial) {
      if ((yield query(SQL.insertTenant, tenant.id, tenant.name, tenant.createdAt)).changes === 0) return 'exists';
      if (initial === undefined) return 'created';
      // A new tenant has no applications or keys: a clash below is the caller's fault, and the throw rolls the tenant back.
      if ((yield* insertApplication(initial.application, initial.key)) === 'exists') throw duplicateInitial('application', initial.application.id);
      for (const key of initial.keys) {
        if (!(yield* insertWrappedKey(key))) throw duplicateInitial('key version', `${key.purpose} ${key.version}`);
      }
      return 'created' satisfies Inserted;
    },
  ),

  getTenant: operation('statement', function* (_d, id) {
    const row = (yield query(SQL.getTenant, id)).rows[0];
    return row === undefined ? null : toTenant(row);
  }),

  /** In creation order. */
  listTenants: operation('statement', function* () {
    return (yield query(SQL.listTenants)).rows.map(toTenant);
  }),

  insertWrappedKey: operation('statement', function* (_d, key) {
    return yield* insertWrappedKey(key);
  }),

  listWrappedKeys: operation('statement', function* (_d, tenantId, purpose) {
    return (yield query(SQL.listWrappedKeys, tenantId, purpose)).rows.map(toWrappedKey);
  }),
};
