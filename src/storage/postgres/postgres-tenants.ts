import { InternalError } from '../../errors/errors.js';
import type { InitialTenantRecords, Inserted, TenantRecord, WrappedKeyRecord } from '../store.js';
import type { PgExecutor, Queryable } from './pg-executor.js';
import type { PostgresApplications } from './postgres-applications.js';
import { toTenant, toWrappedKey } from './record-rows.js';
import type { RecordStatements } from './record-sql.js';

/** A clash inside a tenant being created: the caller gave two records one key (a bug, not input). */
function duplicateInitial(what: string, id: string): InternalError {
  return new InternalError(`createTenant was given a ${what} twice (${id}); nothing was written`);
}

/** Tenants and their wrapped keys: a part of the PostgreSQL store (store-parts.ts). */
export class PostgresTenants {
  readonly #db: PgExecutor;
  readonly #sql: RecordStatements;
  readonly #applications: PostgresApplications;

  constructor(db: PgExecutor, sql: RecordStatements, applications: PostgresApplications) {
    this.#db = db;
    this.#sql = sql;
    this.#applications = applications;
  }

  /** 'exists' when the tenant id is taken. With `initial`: one transaction (see Store). */
  async createTenant(tenant: TenantRecord, initial?: InitialTenantRecords): Promise<Inserted> {
    if (initial === undefined) return this.#insertTenant(this.#db, tenant);
    return this.#db.transaction(async (tx) => {
      if ((await this.#insertTenant(tx, tenant)) === 'exists') return 'exists';
      // A new tenant has no applications or keys: a clash below is the caller's fault, and rolls back.
      if ((await this.#applications.insert(tx, initial.application)) === 'exists') throw duplicateInitial('application', initial.application.id);
      await this.#applications.insertKey(tx, initial.key);
      for (const key of initial.keys) {
        const result = await tx.query(this.#sql.insertWrappedKey, [key.tenantId, key.purpose, key.version, key.wrapped, key.createdAt]);
        if (result.rowCount !== 1) throw duplicateInitial('key version', `${key.purpose} ${key.version}`);
      }
      return 'created';
    });
  }

  async #insertTenant(db: Queryable, tenant: TenantRecord): Promise<Inserted> {
    const result = await db.query(this.#sql.insertTenant, [tenant.id, tenant.name, tenant.createdAt]);
    return result.rowCount === 0 ? 'exists' : 'created';
  }

  async getTenant(id: string): Promise<TenantRecord | null> {
    const { rows } = await this.#db.query(this.#sql.getTenant, [id]);
    return rows.length === 0 ? null : toTenant(rows[0]!);
  }

  /** In creation order. */
  async listTenants(): Promise<TenantRecord[]> {
    return (await this.#db.query(this.#sql.listTenants)).rows.map(toTenant);
  }

  async insertWrappedKey(key: WrappedKeyRecord): Promise<boolean> {
    const result = await this.#db.query(this.#sql.insertWrappedKey, [key.tenantId, key.purpose, key.version, key.wrapped, key.createdAt]);
    return result.rowCount === 1;
  }

  async listWrappedKeys(tenantId: string, purpose: 'data' | 'index'): Promise<WrappedKeyRecord[]> {
    return (await this.#db.query(this.#sql.listWrappedKeys, [tenantId, purpose])).rows.map(toWrappedKey);
  }
}
