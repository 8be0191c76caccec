import type { MigrationOutcome } from '../store.js';
import { InternalError } from '../../errors/errors.js';
import type {
  ContainerScope,
  AuditEntry,
  AuditFilter,
  CreateTokenResult,
  CreateTokensResult,
  DeletedTokenRecord,
  ExpiredTokenRecord,
  Inserted,
  JobRecord,
  ReactorRequestOutcome,
  ReactorRequestRecord,
  InitialTenantRecords,
  PageRequest,
  PageResult,
  Store,
  StoredAuditEntry,
  StoredToken,
  TenantRecord,
  TokenFilter,
  UpdateTokenResult,
  WrappedKeyRecord,
} from '../store.js';
import { insertAuditBatch } from './audit-sql.js';
import { runMigrations } from './migrations.js';
import { runPage } from './paging.js';
import { AUDIT_COLUMNS, toAudit, toTenant, toWrappedKey, type TenantRow, type WrappedKeyRow } from './record-rows.js';
import { type BetterSqlite3Database, type SqliteTransaction } from './sqlite-options.js';
import { SqliteJobs } from './sqlite-jobs.js';
import { SqliteReactorRequests } from './sqlite-reactor-requests.js';
import { SqliteApplications } from './sqlite-applications.js';
import { SqliteIdempotency } from './sqlite-idempotency.js';
import { type WriteTransaction } from './sqlite-record-update.js';
import { SqliteReactors } from './sqlite-reactors.js';
import { SqliteTokenIntents } from './sqlite-token-intents.js';
import { SqliteTokens } from './sqlite-tokens.js';
import { SqliteWebhooks } from './sqlite-webhooks.js';
import { StatementCache } from './statement-cache.js';

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
  #jobs: SqliteJobs;
  #requests: SqliteReactorRequests;
  #read: <R>(fn: () => R) => R;
  #write: WriteTransaction;
  #appendAuditTx: SqliteTransaction<(entries: readonly AuditEntry[]) => void>;
  /** The parts whose methods sqlite-boundary.ts exposes as Store methods beside the core's. */
  readonly applications: SqliteApplications;
  readonly reactors: SqliteReactors;
  readonly idempotency: SqliteIdempotency;
  readonly webhooks: SqliteWebhooks;
  readonly tokenIntents: SqliteTokenIntents;

  /** Prefer `createSqliteStore`. `owned`: whether `close()` closes the database. */
  constructor(db: BetterSqlite3Database, owned: boolean) {
    this.#db = db;
    this.#owned = owned;
    this.#statements = new StatementCache(db);
    const readTx = db.transaction((fn: () => unknown) => fn());
    this.#read = <R>(fn: () => R): R => readTx.deferred(fn) as R;
    this.#tokens = new SqliteTokens(db, this.#statements, this.#read);
    this.webhooks = new SqliteWebhooks(db, this.#statements, this.#read);
    this.#jobs = new SqliteJobs(this.#statements);
    this.#requests = new SqliteReactorRequests(db, this.#statements, this.#jobs);
    this.#write = db.transaction(<T>(write: () => T): T => write()) as WriteTransaction;
    this.#appendAuditTx = db.transaction((entries: readonly AuditEntry[]) => insertAuditBatch(this.#statements, entries));
    this.applications = new SqliteApplications(db, this.#statements, this.#read, this.#write);
    this.reactors = new SqliteReactors(db, this.#statements, this.#read, this.#write);
    this.idempotency = new SqliteIdempotency(db, this.#statements);
    this.tokenIntents = new SqliteTokenIntents(db, this.#statements, (token, now, within) => this.#tokens.createInTransaction(token, now, within));
  }

  /** The underlying connection, for backups (`database.backup(...)`) and diagnostics. Do not write to the store's tables. */
  get database(): BetterSqlite3Database {
    return this.#db;
  }

  migrate(): MigrationOutcome {
    return runMigrations(this.#db);
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
    return this.#write.immediate(() => {
      if (this.#insertTenant(tenant) === 'exists') return 'exists';
      // A new tenant has no applications or keys: a clash below is the caller's fault, and rolls back.
      if (this.applications.insert(initial.application, initial.key) === 'exists') throw duplicateInitial('application', initial.application.id);
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

  createToken(token: StoredToken, now: number, dedupeWithin?: readonly ContainerScope[]): Promise<CreateTokenResult> {
    return this.#tokens.create(token, now, dedupeWithin);
  }

  createTokens(tokens: readonly StoredToken[], now: number, dedupeWithin?: readonly ContainerScope[]): CreateTokensResult {
    return this.#tokens.createMany(tokens, now, dedupeWithin);
  }

  getToken(tenantId: string, id: string, now: number): StoredToken | null {
    return this.#tokens.get(tenantId, id, now);
  }

  listTokens(tenantId: string, filter: TokenFilter, page: PageRequest, now: number): PageResult<StoredToken> {
    return this.#tokens.list(tenantId, filter, page, now);
  }

  updateToken(next: StoredToken, audit: AuditEntry, now: number, dedupeWithin?: readonly ContainerScope[]): UpdateTokenResult {
    return this.#tokens.update(next, audit, now, dedupeWithin);
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
  // --- background jobs ---------------------------------------------------------------------------

  enqueueJob(job: JobRecord): boolean{
    return this.#jobs.enqueue(job);
  }

  claimJobs(owner: string, now: number, leaseMs: number, limit: number, kinds: readonly string[]): JobRecord[]{
    return this.#jobs.claim(owner, now, leaseMs, limit, kinds);
  }

  renewJobLease(id: string, owner: string, until: number): boolean{
    return this.#jobs.renew(id, owner, until);
  }

  finishJob(id: string, owner: string): boolean{
    return this.#jobs.finish(id, owner);
  }

  rescheduleJob(id: string, owner: string, runAt: number, lastError: string | null, attempts: 'keep' | 'reset'): boolean{
    return this.#jobs.reschedule(id, owner, runAt, lastError, attempts);
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


}
