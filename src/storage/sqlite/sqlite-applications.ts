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
  RecordUpdateResult,
  SessionAuthorization,
  SessionRecord,
} from '../store.js';
import { runPage, type ListQuery } from './paging.js';
import { APPLICATION_COLUMNS, toApplication, type ApplicationRow } from './record-rows.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import type { SqliteCredentials } from './sqlite-credentials.js';
import { type WriteTransaction, updateRecord } from './sqlite-record-update.js';
import type { StatementCache } from './statement-cache.js';

const SQL = {
  insertApplication:
    'INSERT INTO applications (tenant_id, id, name, type, permissions, rules, created_by, created_at, modified_by, modified_at, credentials_generation, allowed_origins) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, id) DO NOTHING',
  getApplication: `SELECT ${APPLICATION_COLUMNS} FROM applications t WHERE t.tenant_id = ? AND t.id = ?`,
  deleteApplication: 'DELETE FROM applications WHERE tenant_id = ? AND id = ?',
  applicationPermissions: 'SELECT id, permissions FROM applications WHERE tenant_id = ?',
} as const;

/**
 * Applications: a part of the SQLite store's synchronous core (store-parts.ts, area `applications`);
 * their keys and sessions are the `credentials` part (sqlite-credentials.ts).
 */
export class SqliteApplications {
  #statements: StatementCache;
  #read: <R>(fn: () => R) => R;
  #write: WriteTransaction;
  #credentials: SqliteCredentials;
  #guardedTx: SqliteTransaction<
    (tenantId: string, id: string, keep: readonly Permission[], next: readonly Permission[] | null | undefined, write: () => boolean) => boolean | 'last_holder'
  >;
  #createApplicationTx: SqliteTransaction<(app: ApplicationRecord, key: ApplicationKeyRecord) => Inserted>;

  constructor(db: BetterSqlite3Database, statements: StatementCache, read: <R>(fn: () => R) => R, write: WriteTransaction, credentials: SqliteCredentials) {
    this.#statements = statements;
    this.#read = read;
    this.#write = write;
    this.#credentials = credentials;
    this.#guardedTx = db.transaction(this.#guarded);
    this.#createApplicationTx = db.transaction(this.insert);
  }

  /** Ids are unique per tenant. */
  createApplication(app: ApplicationRecord, key: ApplicationKeyRecord): Inserted {
    return this.#createApplicationTx(app, key);
  }

  /** The application and its key, inside the caller's transaction (createTenant's too). */
  readonly insert = (app: ApplicationRecord, key: ApplicationKeyRecord): Inserted => {
    const result = this.#statements
      .get(SQL.insertApplication)
      .run(
        app.tenantId,
        app.id,
        app.name,
        app.type,
        JSON.stringify(app.permissions ?? []),
        JSON.stringify(app.rules ?? []),
        app.createdBy ?? null,
        app.createdAt,
        app.modifiedBy ?? null,
        app.modifiedAt ?? null,
        app.credentialsGeneration ?? 0,
        JSON.stringify(app.allowedOrigins ?? []),
      );
    if (result.changes === 0) return 'exists';
    this.#credentials.insertKey(key);
    return 'created';
  };

  getApplication(tenantId: string, id: string): ApplicationRecord | null {
    const row = this.#statements.get(SQL.getApplication).get(tenantId, id) as ApplicationRow | undefined;
    return row === undefined ? null : toApplication(row);
  }

  /** In creation order. */
  listApplications(tenantId: string, page: PageRequest): PageResult<ApplicationRecord> {
    const query: ListQuery = { columns: APPLICATION_COLUMNS, from: 'FROM applications t WHERE t.tenant_id = ?', params: [tenantId] };
    return runPage(this.#statements, this.#read, query, page, toApplication);
  }

  /** Writes only the columns of the fields given; `keep` and `expected`: see Store. One transaction. */
  updateApplication(
    tenantId: string,
    id: string,
    changes: ApplicationChanges,
    keep?: readonly Permission[],
    expected?: Pick<ApplicationRecord, 'permissions' | 'rules'>,
  ): RecordUpdateResult<ApplicationRecord> | { status: 'last_holder' } {
    const columns = applicationColumns(changes);
    const condition = expected === undefined ? '' : ' AND permissions = ? AND rules = ?';
    const params = expected === undefined ? [] : applicationExpectation(expected);
    const update = (): RecordUpdateResult<ApplicationRecord> =>
      updateRecord(this.#statements, 'applications', tenantId, id, columns, condition, params, () => this.getApplication(tenantId, id));
    if (keep === undefined || keep.length === 0) return this.#write.immediate(update);
    let result: RecordUpdateResult<ApplicationRecord> = { status: 'not_found' };
    const guarded = this.#guardedTx.immediate(tenantId, id, keep, changes.permissions, () => {
      result = update();
      return result.status === 'updated';
    });
    if (guarded === 'last_holder') return { status: 'last_holder' };
    return result;
  }

  deleteApplication(tenantId: string, id: string, keep?: readonly Permission[]): 'deleted' | 'not_found' | 'last_holder' {
    const remove = () => this.#statements.get(SQL.deleteApplication).run(tenantId, id).changes === 1;
    const outcome = keep === undefined || keep.length === 0 ? remove() : this.#guardedTx.immediate(tenantId, id, keep, null, remove);
    return outcome === 'last_holder' ? outcome : outcome ? 'deleted' : 'not_found';
  }

  /**
   * Runs `write` (an update giving application `id` the permissions `next`, or its deletion when
   * `next` is null) unless it would leave the tenant without an application holding all of `keep`.
   * Inside BEGIN IMMEDIATE: no other writer runs between the count and the write.
   */
  #guarded = (tenantId: string, id: string, keep: readonly Permission[], next: readonly Permission[] | null | undefined, write: () => boolean): boolean | 'last_holder' => {
    const rows = this.#statements.get(SQL.applicationPermissions).all(tenantId) as { id: string; permissions: string }[];
    const holds = (permissions: readonly string[]) => keep.every((p) => permissions.includes(p));
    const before = rows.filter((row) => holds(JSON.parse(row.permissions) as string[]));
    // next: undefined keeps the application's permissions (a rename, a new key).
    const after = rows.filter((row) => (row.id === id && next !== undefined ? next !== null && holds(next) : holds(JSON.parse(row.permissions) as string[])));
    if (before.length > 0 && after.length === 0 && rows.some((row) => row.id === id)) return 'last_holder';
    return write();
  };
}
