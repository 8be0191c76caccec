import type { Permission } from '../../permissions/permissions.js';
import { applicationColumns, applicationExpectation } from '../record-changes.js';
import type {
  ApplicationChanges,
  ApplicationKeyMatch,
  ApplicationKeyRecord,
  ApplicationRecord,
  AuthorizeSessionResult,
  Inserted,
  PageRequest,
  PageResult,
  SessionAuthorization,
  SessionRecord,
  RecordUpdateResult,
} from '../store.js';
import { runPage } from './paging.js';
import type { PgExecutor, Queryable } from './pg-executor.js';
import { missedUpdate, tenantList, updateSql } from './pg-record-update.js';
import type { PostgresCredentials } from './postgres-credentials.js';
import { APPLICATION_COLUMNS, toApplication } from './record-rows.js';
import type { RecordStatements } from './record-sql.js';

const json = (value: unknown) => JSON.stringify(value);
/** Applications: a part of the PostgreSQL store (store-parts.ts); their keys and sessions are the `credentials` part. */
export class PostgresApplications {
  readonly #db: PgExecutor;
  readonly #s: string;
  readonly #sql: RecordStatements;
  readonly #credentials: PostgresCredentials;

  constructor(db: PgExecutor, s: string, sql: RecordStatements, credentials: PostgresCredentials) {
    this.#db = db;
    this.#s = s;
    this.#sql = sql;
    this.#credentials = credentials;
  }

  /** The application and its first key in one transaction. */
  createApplication(app: ApplicationRecord, key: ApplicationKeyRecord): Promise<Inserted> {
    return this.#db.transaction(async (tx) => {
      if ((await this.insert(tx, app)) === 'exists') return 'exists';
      await this.#credentials.insertKey(tx, key);
      return 'created';
    });
  }

  /** The first key of an application, inside the caller's transaction (createTenant's). */
  readonly insertKey = (db: Queryable, key: ApplicationKeyRecord): Promise<void> => this.#credentials.insertKey(db, key);

  /** The application row alone, inside the caller's transaction (createTenant's too). */
  readonly insert = async (db: Queryable, app: ApplicationRecord): Promise<Inserted> => {
    const result = await db.query(this.#sql.insertApplication, [
      app.tenantId,
      app.id,
      app.name,
      app.type,
      json(app.permissions ?? []),
      json(app.rules ?? []),
      app.createdBy ?? null,
      app.createdAt,
      app.modifiedBy ?? null,
      app.modifiedAt ?? null,
      app.credentialsGeneration ?? 0,
      json(app.allowedOrigins ?? []),
    ]);
    return result.rowCount === 0 ? 'exists' : 'created';
  };

  async getApplication(tenantId: string, id: string): Promise<ApplicationRecord | null> {
    const { rows } = await this.#db.query(this.#sql.getApplication, [tenantId, id]);
    return rows.length === 0 ? null : toApplication(rows[0]!);
  }

  /** In creation order. */
  listApplications(tenantId: string, page: PageRequest): Promise<PageResult<ApplicationRecord>> {
    return runPage(this.#db, tenantList(this.#s, APPLICATION_COLUMNS, 'applications', tenantId), page, toApplication);
  }

  /** Writes only the columns of the fields given; `keep`: see Store. */
  async updateApplication(
    tenantId: string,
    id: string,
    changes: ApplicationChanges,
    keep?: readonly Permission[],
    expected?: Pick<ApplicationRecord, 'permissions' | 'rules'>,
  ): Promise<RecordUpdateResult<ApplicationRecord> | { status: 'last_holder' }> {
    const columns = applicationColumns(changes);
    const condition =
      expected === undefined ? [] : applicationExpectation(expected).map((value, i) => ({ sql: (p: string) => `t.${['permissions', 'rules'][i]}::text = ${p}`, value }));
    const update = async (db: Queryable) => {
      const { rows } = await db.query(...updateSql(this.#s, 'applications', APPLICATION_COLUMNS, tenantId, id, columns, condition));
      return rows.length === 0 ? null : toApplication(rows[0]!);
    };
    const guard = keep !== undefined && keep.length > 0 && changes.permissions !== undefined;
    let record: ApplicationRecord | null = null;
    if (!guard) record = await update(this.#db);
    else {
      const guarded = await this.#db.transaction(async (tx) => {
        record = null;
        return this.#guarded(tx, tenantId, id, keep, changes.permissions!, async () => (record = await update(tx)) !== null);
      });
      if (guarded === 'last_holder') return { status: 'last_holder' };
    }
    if (record !== null) return { status: 'updated', record };
    return expected === undefined ? { status: 'not_found' } : missedUpdate(this.#db, this.#s, 'applications', tenantId, id);
  }

  async deleteApplication(tenantId: string, id: string, keep?: readonly Permission[]): Promise<'deleted' | 'not_found' | 'last_holder'> {
    const remove = async (db: Queryable) => (await db.query(this.#sql.deleteApplication, [tenantId, id])).rowCount === 1;
    const outcome =
      keep === undefined || keep.length === 0 ? await remove(this.#db) : await this.#db.transaction((tx) => this.#guarded(tx, tenantId, id, keep, null, () => remove(tx)));
    return outcome === 'last_holder' ? outcome : outcome ? 'deleted' : 'not_found';
  }

  /**
   * Runs `write` (an update giving application `id` the permissions `next`, or its deletion when
   * `next` is null) unless it would leave the tenant without an application holding all of `keep`.
   * The tenant's application rows are locked (in seq order, so two such transactions queue instead
   * of deadlocking); the second then reads what the first committed (a deleted row is skipped).
   */
  async #guarded(
    tx: Queryable,
    tenantId: string,
    id: string,
    keep: readonly Permission[],
    next: readonly Permission[] | null,
    write: () => Promise<boolean>,
  ): Promise<boolean | 'last_holder'> {
    const { rows } = await tx.query(this.#sql.lockApplicationPermissions, [tenantId]);
    const holds = (permissions: readonly string[]) => keep.every((p) => permissions.includes(p));
    const before = rows.filter((row) => holds(row['permissions'] as string[]));
    const after = rows.filter((row) => (row['id'] === id ? next !== null && holds(next) : holds(row['permissions'] as string[])));
    if (before.length > 0 && after.length === 0 && rows.some((row) => row['id'] === id)) return 'last_holder';
    return write();
  }
}
