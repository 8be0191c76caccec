import Database from 'better-sqlite3';
import { InternalError } from '../../errors.js';
import type { Permission } from '../../permissions.js';
import { applicationColumns, formulaColumns, formulaExpectation, reactorColumns, type ColumnChange } from '../record-changes.js';
import type {
  ApplicationKeyMatch,
  ApplicationKeyRecord,
  ApplicationChanges,
  ApplicationRecord,
  AuditEntry,
  AuditFilter,
  AuthorizeSessionResult,
  CreateTokenResult,
  CreateTokensResult,
  DeletedTokenRecord,
  ExpiredTokenRecord,
  FormulaChanges,
  FormulaRecord,
  IdempotencyClaim,
  IdempotencyRecord,
  IdempotencyResponse,
  Inserted,
  JobRecord,
  ReactorRequestOutcome,
  ReactorRequestRecord,
  InitialTenantRecords,
  PageRequest,
  PageResult,
  ReactorChanges,
  ReactorFilter,
  ReactorRecord,
  RecordUpdateResult,
  SessionAuthorization,
  SessionRecord,
  Store,
  StoredAuditEntry,
  StoredToken,
  TenantRecord,
  TokenFilter,
  UpdateTokenResult,
  WrappedKeyRecord,
} from '../store.js';
import { insertAuditBatch } from './audit-sql.js';
import { LIKE_ESCAPE, likeSubstringPattern } from './like-pattern.js';
import { runMigrations } from './migrations.js';
import { runPage, type ListQuery } from './paging.js';
import {
  APPLICATION_COLUMNS,
  AUDIT_COLUMNS,
  FORMULA_COLUMNS,
  REACTOR_COLUMNS,
  toApplication,
  toAudit,
  toFormula,
  toIdempotency,
  toReactor,
  toTenant,
  toWrappedKey,
  type ApplicationRow,
  type AuditRow,
  type FormulaRow,
  type IdempotencyRow,
  type ReactorRow,
  type TenantRow,
  type WrappedKeyRow,
} from './record-rows.js';
import {
  createDatabaseFile,
  resolveSqliteStoreOptions,
  type BetterSqlite3Database,
  type SqliteStoreOptions,
  type SqliteTransaction,
} from './sqlite-options.js';
import { SqliteJobs } from './sqlite-jobs.js';
import { SqliteReactorRequests } from './sqlite-reactor-requests.js';
import { SqliteCredentials } from './sqlite-credentials.js';
import { SqliteTokens } from './sqlite-tokens.js';
import { SqliteWebhooks } from './sqlite-webhooks.js';
import { StatementCache } from './statement-cache.js';
import { checkLimit } from '../limit.js';
import { type SqliteStore, sqliteBoundary } from './sqlite-boundary.js';

type ClaimResult = { claimed: true } | { claimed: false; existing: IdempotencyRecord };

const SQL = {
  insertTenant: 'INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
  getTenant: 'SELECT id, name, created_at FROM tenants WHERE id = ?',
  listTenants: 'SELECT id, name, created_at FROM tenants ORDER BY seq',
  insertWrappedKey: 'INSERT INTO wrapped_keys (tenant_id, purpose, version, wrapped, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
  listWrappedKeys: 'SELECT tenant_id, purpose, version, wrapped, created_at FROM wrapped_keys WHERE tenant_id = ? AND purpose = ? ORDER BY version',

  insertApplication:
    'INSERT INTO applications (tenant_id, id, name, type, permissions, rules, created_by, created_at, modified_by, modified_at) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, id) DO NOTHING',
  getApplication: `SELECT ${APPLICATION_COLUMNS} FROM applications t WHERE t.tenant_id = ? AND t.id = ?`,
  deleteApplication: 'DELETE FROM applications WHERE tenant_id = ? AND id = ?',
  applicationPermissions: 'SELECT id, permissions FROM applications WHERE tenant_id = ?',

  insertFormula:
    'INSERT INTO formulas (tenant_id, id, name, description, code, configuration, request_parameters, created_by, created_at, modified_by, modified_at) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, id) DO NOTHING',
  getFormula: `SELECT ${FORMULA_COLUMNS} FROM formulas t WHERE t.tenant_id = ? AND t.id = ?`,
  formulaExists: 'SELECT 1 AS found FROM formulas WHERE tenant_id = ? AND id = ?',
  formulaInUse: 'SELECT 1 AS found FROM reactors WHERE tenant_id = ? AND formula_id = ? LIMIT 1',
  deleteFormula: 'DELETE FROM formulas WHERE tenant_id = ? AND id = ?',

  insertReactor:
    'INSERT INTO reactors (tenant_id, id, name, name_lower, formula_id, code, configuration, application_id, created_by, created_at, modified_by, modified_at) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, id) DO NOTHING',
  getReactor: `SELECT ${REACTOR_COLUMNS} FROM reactors t WHERE t.tenant_id = ? AND t.id = ?`,
  deleteReactor: 'DELETE FROM reactors WHERE tenant_id = ? AND id = ?',

  getIdempotency:
    'SELECT tenant_id, application_id, key, request_hash, state, status, body, created_at, expires_at, withdraw_at FROM idempotency_keys ' +
    'WHERE tenant_id = ? AND application_id = ? AND key = ?',
  claimIdempotency:
    "INSERT INTO idempotency_keys (tenant_id, application_id, key, request_hash, state, status, body, created_at, expires_at) VALUES (?, ?, ?, ?, 'in_flight', NULL, NULL, ?, ?) " +
    "ON CONFLICT (tenant_id, application_id, key) DO UPDATE SET request_hash = excluded.request_hash, state = 'in_flight', status = NULL, body = NULL, " +
    'created_at = excluded.created_at, expires_at = excluded.expires_at, withdraw_at = NULL',
  inFlightIdempotency: "SELECT 1 FROM idempotency_keys WHERE tenant_id = ? AND application_id = ? AND key = ? AND state = 'in_flight' AND created_at = ?",
  completeIdempotency:
    "UPDATE idempotency_keys SET state = 'done', status = ?, body = ?, expires_at = ?, withdraw_at = ? WHERE tenant_id = ? AND application_id = ? AND key = ? AND created_at = ?",
  withdrawIdempotency:
    "UPDATE idempotency_keys SET state = 'withdrawn', status = NULL, body = NULL, expires_at = ?, withdraw_at = NULL WHERE tenant_id = ? AND application_id = ? AND key = ? AND created_at = ?",
  idempotencyTokenTimes: 'SELECT expires_at, cvc_purge_at FROM tokens WHERE tenant_id = ? AND id = ?',
  idempotencyTokenDeleted: 'SELECT 1 FROM deleted_tokens WHERE tenant_id = ? AND id = ?',
  insertIdempotencyToken:
    'INSERT INTO idempotency_tokens (tenant_id, token_id, application_id, key, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
  releaseIdempotency: "DELETE FROM idempotency_keys WHERE tenant_id = ? AND application_id = ? AND key = ? AND state = 'in_flight' AND created_at = ?",
  purgeExpiredIdempotency:
    'DELETE FROM idempotency_keys WHERE (tenant_id, application_id, key) IN ' +
    '(SELECT tenant_id, application_id, key FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)',
} as const;

/** A clash inside a tenant being created: the caller gave two records one key (a bug, not input). */
function duplicateInitial(what: string, id: string): InternalError {
  return new InternalError(`createTenant was given a ${what} twice (${id}); nothing was written`);
}

const ids = (values: readonly string[]) => JSON.stringify([...new Set(values.map(String))]);

/**
 * The SQLite store's synchronous core (better-sqlite3): each method one atomic operation, answered
 * synchronously so transactions can compose them. Not a Store itself: `createSqliteStore` puts the
 * asynchronous boundary around it (sqlite-boundary.ts), which is what callers see.
 */
export class SqliteStoreCore {
  #db: BetterSqlite3Database;
  #owned: boolean;
  #statements: StatementCache;
  #tokens: SqliteTokens;
  #webhooks: SqliteWebhooks;
  #jobs: SqliteJobs;
  #requests: SqliteReactorRequests;
  #read: <R>(fn: () => R) => R;
  #deleteFormulaTx: SqliteTransaction<(tenantId: string, id: string) => 'deleted' | 'not_found' | 'in_use'>;
  #claimTx: SqliteTransaction<(record: IdempotencyRecord, now: number) => ClaimResult>;
  #completeTx: SqliteTransaction<(claim: IdempotencyClaim, response: IdempotencyResponse) => void>;
  #guardedTx: SqliteTransaction<
    (tenantId: string, id: string, keep: readonly Permission[], next: readonly Permission[] | null | undefined, write: () => boolean) => boolean | 'last_holder'
  >;
  #writeTx: SqliteTransaction<(write: () => unknown) => unknown>;
  #appendAuditTx: SqliteTransaction<(entries: readonly AuditEntry[]) => void>;
  #credentials: SqliteCredentials;
  #createApplicationTx: SqliteTransaction<(app: ApplicationRecord, key: ApplicationKeyRecord) => Inserted>;

  /** Prefer `createSqliteStore`. `owned`: whether `close()` closes the database. */
  constructor(db: BetterSqlite3Database, owned: boolean) {
    this.#db = db;
    this.#owned = owned;
    this.#statements = new StatementCache(db);
    const readTx = db.transaction((fn: () => unknown) => fn());
    this.#read = <R>(fn: () => R): R => readTx.deferred(fn) as R;
    this.#tokens = new SqliteTokens(db, this.#statements, this.#read);
    this.#webhooks = new SqliteWebhooks(db, this.#statements, this.#read);
    this.#jobs = new SqliteJobs(this.#statements);
    this.#requests = new SqliteReactorRequests(db, this.#statements, this.#jobs);
    this.#deleteFormulaTx = db.transaction(this.#deleteFormula);
    this.#claimTx = db.transaction(this.#claim);
    this.#completeTx = db.transaction(this.#complete);
    this.#guardedTx = db.transaction(this.#guarded);
    this.#writeTx = db.transaction((write: () => unknown) => write());
    this.#appendAuditTx = db.transaction((entries: readonly AuditEntry[]) => insertAuditBatch(this.#statements, entries));
    this.#credentials = new SqliteCredentials(db, this.#statements);
    this.#createApplicationTx = db.transaction(this.#createApplication);
  }

  /** The underlying connection, for backups (`database.backup(...)`) and diagnostics. Do not write to the store's tables. */
  get database(): BetterSqlite3Database {
    return this.#db;
  }

  migrate(): void {
    runMigrations(this.#db);
  }

  /** Closes the database if the store opened it; a database passed in stays open. Idempotent. */
  close(): void {
    if (this.#db.open) this.#tokens.flush();
    if (this.#owned && this.#db.open) this.#db.close();
  }

  // --- tenants and keys -------------------------------------------------------------------------

  /** 'exists' when the tenant id is taken. With `initial`: one transaction (see Store). */
  createTenant(tenant: TenantRecord, initial?: InitialTenantRecords): Inserted {
    if (initial === undefined) return this.#insertTenant(tenant);
    return this.#immediate(() => {
      if (this.#insertTenant(tenant) === 'exists') return 'exists';
      // A new tenant has no applications or keys: a clash below is the caller's fault, and rolls back.
      if (this.#createApplication(initial.application, initial.key) === 'exists') throw duplicateInitial('application', initial.application.id);
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

  // --- tokens -----------------------------------------------------------------------------------

  createToken(token: StoredToken, now: number): CreateTokenResult | Promise<CreateTokenResult> {
    return this.#tokens.create(token, now);
  }

  createTokens(tokens: readonly StoredToken[], now: number): CreateTokensResult {
    return this.#tokens.createMany(tokens, now);
  }

  getToken(tenantId: string, id: string, now: number): StoredToken | null {
    return this.#tokens.get(tenantId, id, now);
  }

  listTokens(tenantId: string, filter: TokenFilter, page: PageRequest, now: number): PageResult<StoredToken> {
    return this.#tokens.list(tenantId, filter, page, now);
  }

  updateToken(next: StoredToken, audit: AuditEntry, now: number): UpdateTokenResult {
    return this.#tokens.update(next, audit, now);
  }

  deleteToken(tenantId: string, id: string, deletedBy: string, audit: AuditEntry, now: number): boolean {
    return this.#tokens.delete(tenantId, id, deletedBy, audit, now);
  }

  getDeletedToken(tenantId: string, id: string): DeletedTokenRecord | null {
    return this.#tokens.getDeleted(tenantId, id);
  }

  /** Oldest expiry first; one transaction per call. */
  purgeExpiredTokens(now: number, limit: number): ExpiredTokenRecord[] {
    return this.#tokens.purgeExpired(now, limit);
  }

  /** Includes expired-but-unswept tokens: their cvc must go too. */
  listCvcDue(now: number, limit: number): StoredToken[] {
    return this.#tokens.listCvcDue(now, limit);
  }

  replaceCiphertext(
    tenantId: string,
    id: string,
    expected: Uint8Array,
    next: { ciphertext: Uint8Array; keyVersion: number; cvcPurgeAt: number | null },
  ): boolean {
    return this.#tokens.replaceCiphertext(tenantId, id, expected, next);
  }

  /** In index order (key version, then creation); re-encryption re-lists after each batch. */
  listTokensBelowKeyVersion(tenantId: string, version: number, limit: number): StoredToken[] {
    return this.#tokens.listBelowKeyVersion(tenantId, version, limit);
  }

  countTokensBelowKeyVersion(tenantId: string, version: number): number {
    return this.#tokens.countBelowKeyVersion(tenantId, version);
  }

  // --- applications ----------------------------------------------------------------------------

  /** Ids are unique per tenant. */
  createApplication(app: ApplicationRecord, key: ApplicationKeyRecord): Inserted {
    return this.#createApplicationTx(app, key);
  }

  #createApplication = (app: ApplicationRecord, key: ApplicationKeyRecord): Inserted => {
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
      );
    if (result.changes === 0) return 'exists';
    this.#credentials.insertKey(key);
    return 'created';
  };

  getApplication(tenantId: string, id: string): ApplicationRecord | null {
    const row = this.#statements.get(SQL.getApplication).get(tenantId, id) as ApplicationRow | undefined;
    return row === undefined ? null : toApplication(row);
  }

  findApplicationKeys(keyLookup: string): ApplicationKeyMatch[] {
    return this.#credentials.findKeys(keyLookup);
  }

  createApplicationKey(key: ApplicationKeyRecord, max: number): 'created' | 'not_found' | 'limit' {
    return this.#credentials.createKey(key, max);
  }

  listApplicationKeys(tenantId: string, applicationId: string): ApplicationKeyRecord[] {
    return this.#credentials.listKeys(tenantId, applicationId);
  }

  getApplicationKey(tenantId: string, applicationId: string, keyId: string): ApplicationKeyRecord | null {
    return this.#credentials.getKey(tenantId, applicationId, keyId);
  }

  deleteApplicationKey(tenantId: string, applicationId: string, keyId: string): 'deleted' | 'not_found' | 'last_key' {
    return this.#credentials.deleteKey(tenantId, applicationId, keyId);
  }

  replaceApplicationKeys(key: ApplicationKeyRecord, modifiedBy: string): boolean {
    return this.#credentials.replaceKeys(key, modifiedBy);
  }

  /** In creation order. */
  listApplications(tenantId: string, page: PageRequest): PageResult<ApplicationRecord> {
    const query: ListQuery = { columns: APPLICATION_COLUMNS, from: 'FROM applications t WHERE t.tenant_id = ?', params: [tenantId] };
    return runPage(this.#statements, this.#read, query, page, toApplication);
  }

  /** Writes only the columns of the fields given; `keep`: see Store. One transaction. */
  updateApplication(
    tenantId: string,
    id: string,
    changes: ApplicationChanges,
    keep?: readonly Permission[],
  ): { status: 'updated'; record: ApplicationRecord } | { status: 'not_found' } | { status: 'last_holder' } {
    const columns = applicationColumns(changes);
    const update = (): RecordUpdateResult<ApplicationRecord> =>
      this.#updateRecord('applications', tenantId, id, columns, '', [], () => this.getApplication(tenantId, id));
    if (keep === undefined || keep.length === 0) return this.#immediate(update) as { status: 'updated'; record: ApplicationRecord } | { status: 'not_found' };
    let result: RecordUpdateResult<ApplicationRecord> = { status: 'not_found' };
    const guarded = this.#guardedTx.immediate(tenantId, id, keep, changes.permissions, () => {
      result = update();
      return result.status === 'updated';
    });
    if (guarded === 'last_holder') return { status: 'last_holder' };
    return result as { status: 'updated'; record: ApplicationRecord } | { status: 'not_found' };
  }

  /** Runs `write` in one BEGIN IMMEDIATE transaction. */
  #immediate<T>(write: () => T): T {
    return this.#writeTx.immediate(write) as T;
  }

  /**
   * UPDATE of `columns` where the row is the tenant's `id` and `condition` (a precondition) holds,
   * then the row as stored. Runs inside a transaction (the caller's), so the read is the write's.
   */
  #updateRecord<T>(
    table: 'applications' | 'formulas' | 'reactors',
    tenantId: string,
    id: string,
    columns: readonly ColumnChange[],
    condition: string,
    conditionParams: readonly unknown[],
    read: () => T | null,
  ): RecordUpdateResult<T> {
    const sql = `UPDATE ${table} SET ${columns.map((c) => `${c.column} = ?`).join(', ')} WHERE tenant_id = ? AND id = ?${condition}`;
    const changed = this.#statements.get(sql).run(...columns.map((c) => c.value), tenantId, id, ...conditionParams).changes === 1;
    const record = read();
    if (record === null) return { status: 'not_found' };
    return changed ? { status: 'updated', record } : { status: 'changed' };
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
  #guarded = (
    tenantId: string,
    id: string,
    keep: readonly Permission[],
    next: readonly Permission[] | null | undefined,
    write: () => boolean,
  ): boolean | 'last_holder' => {
    const rows = this.#statements.get(SQL.applicationPermissions).all(tenantId) as { id: string; permissions: string }[];
    const holds = (permissions: readonly string[]) => keep.every((p) => permissions.includes(p));
    const before = rows.filter((row) => holds(JSON.parse(row.permissions) as string[]));
    // next: undefined keeps the application's permissions (a rename, a new key).
    const after = rows.filter((row) => (row.id === id && next !== undefined ? next !== null && holds(next) : holds(JSON.parse(row.permissions) as string[])));
    if (before.length > 0 && after.length === 0 && rows.some((row) => row.id === id)) return 'last_holder';
    return write();
  };

  // --- sessions ---------------------------------------------------------------------------------

  /** 'exists' (nothing written) when the id or the tenant's nonce hash is taken. */
  createSession(session: SessionRecord): Inserted {
    try {
      this.#credentials.createSession(session);
      return 'created';
    } catch (error) {
      if ((error as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) return 'exists';
      throw error;
    }
  }

  findSessions(keyLookup: string): SessionRecord[] {
    return this.#credentials.findSessions(keyLookup);
  }

  authorizeSession(tenantId: string, nonceHash: string, authorization: SessionAuthorization, now: number): AuthorizeSessionResult {
    return this.#credentials.authorizeSession(tenantId, nonceHash, authorization, now);
  }

  purgeExpiredSessions(now: number, limit: number): number {
    return this.#credentials.purgeExpiredSessions(now, limit);
  }

  // --- reactor formulas and reactors ------------------------------------------------------------

  createFormula(formula: FormulaRecord): Inserted {
    const result = this.#statements
      .get(SQL.insertFormula)
      .run(
        formula.tenantId,
        formula.id,
        formula.name,
        formula.description ?? null,
        formula.code,
        JSON.stringify(formula.configuration ?? []),
        JSON.stringify(formula.requestParameters ?? []),
        formula.createdBy ?? null,
        formula.createdAt,
        formula.modifiedBy ?? null,
        formula.modifiedAt ?? null,
      );
    return result.changes === 0 ? 'exists' : 'created';
  }

  getFormula(tenantId: string, id: string): FormulaRecord | null {
    const row = this.#statements.get(SQL.getFormula).get(tenantId, id) as FormulaRow | undefined;
    return row === undefined ? null : toFormula(row);
  }

  listFormulas(tenantId: string, page: PageRequest): PageResult<FormulaRecord> {
    const query: ListQuery = { columns: FORMULA_COLUMNS, from: 'FROM formulas t WHERE t.tenant_id = ?', params: [tenantId] };
    return runPage(this.#statements, this.#read, query, page, toFormula);
  }

  /** Writes only the columns of the fields given, under the precondition when there is one. One transaction. */
  updateFormula(
    tenantId: string,
    id: string,
    changes: FormulaChanges,
    expected?: Pick<FormulaRecord, 'code' | 'configuration' | 'requestParameters'>,
  ): RecordUpdateResult<FormulaRecord> {
    const condition = expected === undefined ? '' : ' AND code = ? AND configuration = ? AND request_parameters = ?';
    const params = expected === undefined ? [] : formulaExpectation(expected);
    return this.#immediate(() =>
      this.#updateRecord('formulas', tenantId, id, formulaColumns(changes), condition, params, () => this.getFormula(tenantId, id)),
    );
  }

  deleteFormula(tenantId: string, id: string): 'deleted' | 'not_found' | 'in_use' {
    return this.#deleteFormulaTx.immediate(tenantId, id);
  }

  createReactor(reactor: ReactorRecord): Inserted {
    const result = this.#statements
      .get(SQL.insertReactor)
      .run(
        reactor.tenantId,
        reactor.id,
        reactor.name,
        reactor.name.toLowerCase(),
        reactor.formulaId ?? '',
        reactor.code ?? null,
        JSON.stringify(reactor.configuration ?? {}),
        reactor.applicationId ?? null,
        reactor.createdBy ?? null,
        reactor.createdAt,
        reactor.modifiedBy ?? null,
        reactor.modifiedAt ?? null,
      );
    return result.changes === 0 ? 'exists' : 'created';
  }

  getReactor(tenantId: string, id: string): ReactorRecord | null {
    const row = this.#statements.get(SQL.getReactor).get(tenantId, id) as ReactorRow | undefined;
    return row === undefined ? null : toReactor(row);
  }

  /** In creation order; `name` is a case-insensitive substring in which `*` matches any run. */
  listReactors(tenantId: string, filter: ReactorFilter, page: PageRequest): PageResult<ReactorRecord> {
    const where = ['t.tenant_id = ?'];
    const params: unknown[] = [tenantId];
    if (filter?.ids !== undefined) {
      where.push('t.id IN (SELECT value FROM json_each(?))');
      params.push(ids(filter.ids));
    }
    if (filter?.name !== undefined && filter.name !== null) {
      where.push(`t.name_lower LIKE ? ESCAPE '${LIKE_ESCAPE}'`);
      params.push(likeSubstringPattern(filter.name));
    }
    return runPage(this.#statements, this.#read, { columns: REACTOR_COLUMNS, from: `FROM reactors t WHERE ${where.join(' AND ')}`, params }, page, toReactor);
  }

  /** Writes only the columns of the fields given, under the precondition when there is one. One transaction. */
  updateReactor(tenantId: string, id: string, changes: ReactorChanges, expected?: { applicationId: string | null }): RecordUpdateResult<ReactorRecord> {
    const condition = expected === undefined ? '' : ' AND application_id IS ?';
    const params = expected === undefined ? [] : [expected.applicationId];
    return this.#immediate(() =>
      this.#updateRecord('reactors', tenantId, id, reactorColumns(changes), condition, params, () => this.getReactor(tenantId, id)),
    );
  }

  deleteReactor(tenantId: string, id: string): boolean {
    return this.#statements.get(SQL.deleteReactor).run(tenantId, id).changes === 1;
  }

  // --- idempotency ------------------------------------------------------------------------------

  claimIdempotencyKey(record: IdempotencyRecord, now: number): ClaimResult {
    return this.#claimTx.immediate(record, now);
  }

  /** Only the claim's in-flight record is completed: a done one keeps its first response. One transaction. */
  completeIdempotencyKey(claim: IdempotencyClaim, response: IdempotencyResponse): void {
    this.#completeTx.immediate(claim, response);
  }

  /** Only the claim's in-flight record is released: a done one keeps answering retries. */
  releaseIdempotencyKey(claim: IdempotencyClaim): void {
    this.#statements.get(SQL.releaseIdempotency).run(claim.tenantId, claim.applicationId, claim.key, claim.claimedAt);
  }

  purgeExpiredIdempotencyKeys(now: number, limit: number): number {
    return this.#statements.get(SQL.purgeExpiredIdempotency).run(now, checkLimit(limit)).changes;
  }

  // --- asynchronous reactor runs -----------------------------------------------------------------

  createReactorRequest(request: ReactorRequestRecord, job: JobRecord): void{
    return this.#requests.create(request, job);
  }

  getReactorRequest(tenantId: string, id: string): ReactorRequestRecord | null{
    return this.#requests.get(tenantId, id);
  }

  startReactorRequest(tenantId: string, id: string, now: number): boolean{
    return this.#requests.start(tenantId, id, now);
  }

  finishReactorRequest(tenantId: string, id: string, outcome: ReactorRequestOutcome): boolean{
    return this.#requests.finish(tenantId, id, outcome);
  }

  purgeExpiredReactorRequests(now: number, limit: number): number{
    return this.#requests.purge(now, limit);
  }
  // --- webhooks: SqliteWebhooks, whose methods the boundary exposes beside these ---------------

  /** The webhook part of the store (sqlite-boundary.ts exposes its methods). */
  get webhooks(): SqliteWebhooks {
    return this.#webhooks;
  }

  // --- background jobs ---------------------------------------------------------------------------

  enqueueJob(job: JobRecord): boolean{
    return this.#jobs.enqueue(job);
  }

  claimJobs(owner: string, now: number, leaseMs: number, limit: number): JobRecord[]{
    return this.#jobs.claim(owner, now, leaseMs, limit);
  }

  renewJobLease(id: string, owner: string, until: number): boolean{
    return this.#jobs.renew(id, owner, until);
  }

  finishJob(id: string, owner: string): boolean{
    return this.#jobs.finish(id, owner);
  }

  rescheduleJob(id: string, owner: string, runAt: number, lastError: string | null): boolean{
    return this.#jobs.reschedule(id, owner, runAt, lastError);
  }

  countDueJobs(now: number): number{
    return this.#jobs.countDue(now);
  }

  // --- audit ------------------------------------------------------------------------------------

  /** One transaction for the batch (one fsync). */
  appendAudit(entries: readonly AuditEntry[]): void {
    if (entries.length > 0) this.#appendAuditTx.immediate(entries);
  }

  /**
   * Oldest first (ascending seq), so a cursor walks the log in the order it was written and a page
   * never shifts under entries appended meanwhile. The log has no secondary index (every token
   * write appends to it, and each index would cost every write), so a listing walks it in seq order
   * and a filter that matches rarely reads far.
   */
  listAudit(tenantId: string, filter: AuditFilter, page: PageRequest): PageResult<StoredAuditEntry> {
    const where = ['t.tenant_id = ?'];
    const params: unknown[] = [tenantId];
    if (filter?.resourceId !== undefined) {
      where.push('t.resource_id = ?');
      params.push(filter.resourceId);
    }
    if (filter?.actor !== undefined) {
      where.push('t.actor = ?');
      params.push(filter.actor);
    }
    if (filter?.operation !== undefined) {
      where.push('t.operation = ?');
      params.push(filter.operation);
    }
    return runPage(this.#statements, this.#read, { columns: AUDIT_COLUMNS, from: `FROM audit_log t WHERE ${where.join(' AND ')}`, params }, page, toAudit);
  }

  #deleteFormula = (tenantId: string, id: string): 'deleted' | 'not_found' | 'in_use' => {
    if (this.#statements.get(SQL.formulaExists).get(tenantId, id) === undefined) return 'not_found';
    if (this.#statements.get(SQL.formulaInUse).get(tenantId, id) !== undefined) return 'in_use';
    this.#statements.get(SQL.deleteFormula).run(tenantId, id);
    return 'deleted';
  };

  /** See Store.completeIdempotencyKey. Under the write lock, so no deletion interleaves. */
  #complete = (claim: IdempotencyClaim, response: IdempotencyResponse): void => {
    const statements = this.#statements;
    const { tenantId, applicationId, key, claimedAt } = claim;
    if (statements.get(SQL.inFlightIdempotency).get(tenantId, applicationId, key, claimedAt) === undefined) return;
    const tokens: string[] = [];
    let withdrawAt: number | null = null;
    for (const id of new Set(response.tokenIds)) {
      const times = statements.get(SQL.idempotencyTokenTimes).get(tenantId, id) as { expires_at: number | null; cvc_purge_at: number | null } | undefined;
      if (times === undefined) {
        if (statements.get(SQL.idempotencyTokenDeleted).get(tenantId, id) !== undefined) {
          statements.get(SQL.withdrawIdempotency).run(response.expiresAt, tenantId, applicationId, key, claimedAt);
          return;
        }
        continue; // not a token id (a reactor's id, a value the client chose): nothing to follow
      }
      tokens.push(id);
      for (const at of [times.expires_at, times.cvc_purge_at]) if (at !== null && (withdrawAt === null || at < withdrawAt)) withdrawAt = at;
    }
    statements.get(SQL.completeIdempotency).run(response.status, response.body, response.expiresAt, withdrawAt, tenantId, applicationId, key, claimedAt);
    const insert = statements.get(SQL.insertIdempotencyToken);
    for (const id of tokens) insert.run(tenantId, id, applicationId, key, claimedAt);
  };

  #claim = (record: IdempotencyRecord, now: number): ClaimResult => {
    const row = this.#statements.get(SQL.getIdempotency).get(record.tenantId, record.applicationId, record.key) as IdempotencyRow | undefined;
    if (row !== undefined && row.expires_at > now) return { claimed: false, existing: toIdempotency(row) };
    this.#statements
      .get(SQL.claimIdempotency)
      .run(record.tenantId, record.applicationId, record.key, record.requestHash, record.createdAt, record.expiresAt);
    return { claimed: true };
  };
}

/**
 * At synchronous=NORMAL, pages of WAL after which a commit checkpoints (SQLite's default is 1000).
 * At NORMAL the checkpoints are the only fsyncs (of the WAL, then of the database file), and a token
 * creation dirties about six pages, so at the default every ~170th creation paid two fsyncs: most of
 * the cost of a creation. Measured on the 2-core machine (createToken + AES-GCM + HMAC vs a raw
 * better-sqlite3 insert + AES-GCM + HMAC, WAL, NORMAL, 12,000 each, interleaved): 46-52% of the raw
 * rate at 1000 pages, 57-81% at 4000, 68-97% at 10000. The cost: the WAL file grows to about 40 MB
 * (then is reused), and a power loss may lose up to that much of the latest commits, which NORMAL
 * already accepts. At FULL every commit fsyncs anyway and checkpoints are a small share, so the
 * default stays (a larger WAL would only add file growth to those fsyncs).
 */
const NORMAL_WAL_AUTOCHECKPOINT_PAGES = 10_000;

/**
 * Creates the SQLite store. Options are validated once (ValidationError naming the option).
 * Call `migrate()` before first use (`createVault` does).
 * @example
 * const store = createSqliteStore({ filename: 'vault.db' });           // WAL, synchronous=FULL
 * const fast = createSqliteStore({ filename: 'vault.db', synchronous: 'normal' });
 * const mine = createSqliteStore({ database: new Database('app.db') }); // not closed by store.close()
 */
export function createSqliteStore(options: SqliteStoreOptions = {}): SqliteStore {
  return sqliteBoundary(openSqliteStoreCore(options));
}

/** The synchronous core on its database, without the boundary: for the store's own tests. */
export function openSqliteStoreCore(options: SqliteStoreOptions = {}): SqliteStoreCore {
  const resolved = resolveSqliteStoreOptions(options);
  const owned = resolved.database === undefined;
  if (owned) createDatabaseFile(resolved.filename);
  const db = resolved.database ?? ((new Database(resolved.filename) satisfies BetterSqlite3Database));
  try {
    if (owned && !db.memory) {
      // Before WAL is first used, so the WAL index is kept in heap memory rather than shared memory.
      if (resolved.exclusive) db.pragma('locking_mode = EXCLUSIVE');
      db.pragma('journal_mode = WAL');
      if (resolved.synchronous === 'normal') db.pragma(`wal_autocheckpoint = ${NORMAL_WAL_AUTOCHECKPOINT_PAGES}`);
    }
    if (resolved.synchronous !== undefined) db.pragma(`synchronous = ${resolved.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    if (resolved.busyTimeoutMs !== undefined) db.pragma(`busy_timeout = ${resolved.busyTimeoutMs}`);
    // Negative: a size in KiB rather than in pages.
    if (resolved.cacheSizeMiB !== undefined) db.pragma(`cache_size = ${-resolved.cacheSizeMiB * 1024}`);
    db.pragma('foreign_keys = ON');
  } catch (error) {
    if (owned) db.close();
    throw error;
  }
  return new SqliteStoreCore(db, owned);
}
