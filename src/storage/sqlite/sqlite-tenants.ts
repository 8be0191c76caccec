import { InternalError } from '../../errors/errors.js';
import type { InitialTenantRecords, Inserted, TenantRecord, WrappedKeyRecord } from '../store.js';
import { toTenant, toWrappedKey, type TenantRow, type WrappedKeyRow } from './record-rows.js';
import type { SqliteApplications } from './sqlite-applications.js';
import type { WriteTransaction } from './sqlite-record-update.js';
import type { StatementCache } from './statement-cache.js';

const SQL = {
  insertTenant: 'INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
  getTenant: 'SELECT id, name, created_at FROM tenants WHERE id = ?',
  listTenants: 'SELECT id, name, created_at FROM tenants ORDER BY seq',
  insertWrappedKey: 'INSERT INTO wrapped_keys (tenant_id, purpose, version, wrapped, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
  listWrappedKeys: 'SELECT tenant_id, purpose, version, wrapped, created_at FROM wrapped_keys WHERE tenant_id = ? AND purpose = ? ORDER BY version',
} as const;

/** A clash inside a tenant being created: the caller gave two records one key (a bug, not input). */
function duplicateInitial(what: string, id: string): InternalError {
  return new InternalError(`createTenant was given a ${what} twice (${id}); nothing was written`);
}

/** Tenants and their wrapped keys: a part of the SQLite store (store-parts.ts, area `tenants`). */
export class SqliteTenants {
  readonly #statements: StatementCache;
  readonly #write: WriteTransaction;
  readonly #applications: SqliteApplications;

  constructor(statements: StatementCache, write: WriteTransaction, applications: SqliteApplications) {
    this.#statements = statements;
    this.#write = write;
    this.#applications = applications;
  }

  /** 'exists' when the tenant id is taken. With `initial`: one transaction (see Store). */
  createTenant(tenant: TenantRecord, initial?: InitialTenantRecords): Inserted {
    if (initial === undefined) return this.#insertTenant(tenant);
    return this.#write.immediate(() => {
      if (this.#insertTenant(tenant) === 'exists') return 'exists';
      // A new tenant has no applications or keys: a clash below is the caller's fault, and rolls back.
      if (this.#applications.insert(initial.application, initial.key) === 'exists') throw duplicateInitial('application', initial.application.id);
      for (const key of initial.keys) {
        if (!this.insertWrappedKey(key)) throw duplicateInitial('key version', `${key.purpose} ${key.version}`);
      }
      return 'created';
    });
  }

  #insertTenant(tenant: TenantRecord): Inserted {
    return this.#statements.get(SQL.insertTenant).run(tenant.id, tenant.name, tenant.createdAt).changes === 0 ? 'exists' : 'created';
  }

  getTenant(id: string): TenantRecord | null {
    const row = this.#statements.get(SQL.getTenant).get(id) as TenantRow | undefined;
    return row === undefined ? null : toTenant(row);
  }

  /** In creation order. */
  listTenants(): TenantRecord[] {
    return (this.#statements.get(SQL.listTenants).all() as TenantRow[]).map(toTenant);
  }

  insertWrappedKey(key: WrappedKeyRecord): boolean {
    return this.#statements.get(SQL.insertWrappedKey).run(key.tenantId, key.purpose, key.version, key.wrapped, key.createdAt).changes === 1;
  }

  listWrappedKeys(tenantId: string, purpose: 'data' | 'index'): WrappedKeyRecord[] {
    return (this.#statements.get(SQL.listWrappedKeys).all(tenantId, purpose) as WrappedKeyRow[]).map(toWrappedKey);
  }
}
