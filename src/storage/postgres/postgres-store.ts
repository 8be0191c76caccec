import type { MigrationOutcome } from '../store.js';
import pg from 'pg';
import type {
  ContainerScope,
  AuditEntry,
  CreateTokenResult,
  CreateTokensResult,
  DeletedTokenRecord,
  ExpiredTokenRecord,
  JobRecord,
  ReactorRequestOutcome,
  ReactorRequestRecord,
  PageRequest,
  PageResult,
  Store,
  StoredToken,
  TokenFilter,
  UpdateTokenResult,
} from '../store.js';
import { runMigrations } from './migrations.js';
import { PostgresJobs } from './postgres-jobs.js';
import { PostgresReactorRequests } from './postgres-reactor-requests.js';
import { PgExecutor } from './pg-executor.js';
import { quoteSchema, type PgPool } from './postgres-options.js';
import { PostgresApplications } from './postgres-applications.js';
import { PostgresAudit } from './postgres-audit.js';
import { PostgresIdempotency } from './postgres-idempotency.js';
import { PostgresReactors } from './postgres-reactors.js';
import { PostgresTenants } from './postgres-tenants.js';
import { PostgresTokenIntents } from './postgres-token-intents.js';
import { PostgresTokens } from './postgres-tokens.js';
import { PostgresWebhooks } from './postgres-webhooks.js';
import type { WebhookStore } from '../webhook-records.js';
import { recordStatements, type RecordStatements } from './record-sql.js';

/** Advisory lock class of `withLock`; the second key hashes the schema and the lock's name. */
export const NAMED_LOCK_CLASS = 0x74760003;

/**
 * The PostgreSQL Store (pg). Stateless apart from its pool: any number of instances, in any number
 * of processes, may share one database; every guarantee of the Store interface holds across them.
 * Build it with `createPostgresStore`.
 */
export class PostgresStore implements Store {
  readonly #pool: PgPool;
  readonly #owned: boolean;
  readonly #db: PgExecutor;
  readonly #schema: string;
  readonly #s: string;
  readonly #sql: RecordStatements;
  readonly #tokens: PostgresTokens;
  readonly #tokenIntents: PostgresTokenIntents;
  readonly #webhooks: PostgresWebhooks;
  readonly #jobs: PostgresJobs;
  readonly #requests: PostgresReactorRequests;
  readonly #applications: PostgresApplications;
  readonly #reactors: PostgresReactors;
  readonly #idempotency: PostgresIdempotency;
  readonly #tenants: PostgresTenants;
  readonly #audit: PostgresAudit;
  #closed: Promise<void> | undefined;

  /** Prefer `createPostgresStore`. `owned`: whether `close()` ends the pool. */
  constructor(pool: PgPool, schema: string, owned: boolean) {
    this.#pool = pool;
    this.#owned = owned;
    this.#db = new PgExecutor(pool);
    this.#schema = schema;
    this.#s = quoteSchema(schema);
    this.#sql = recordStatements(this.#s);
    this.#tokens = new PostgresTokens(this.#db, schema, this.#s);
    this.#tokenIntents = new PostgresTokenIntents(this.#db, this.#s, this.#tokens);
    this.#webhooks = new PostgresWebhooks(this.#db, this.#s);
    this.#jobs = new PostgresJobs(this.#db, this.#s);
    this.#requests = new PostgresReactorRequests(this.#db, this.#s, this.#jobs);
    this.#applications = new PostgresApplications(this.#db, this.#s, this.#sql);
    this.#reactors = new PostgresReactors(this.#db, this.#s, this.#sql);
    this.#idempotency = new PostgresIdempotency(this.#db, this.#s, this.#sql);
    this.#tenants = new PostgresTenants(this.#db, this.#sql, this.#applications);
    this.#audit = new PostgresAudit(this.#db, this.#s, this.#sql);
  }

  /** The pool, for diagnostics and backups. Do not write to the store's tables. */
  get pool(): PgPool {
    return this.#pool;
  }

  /** The schema holding the store's tables. */
  get schema(): string {
    return this.#schema;
  }

  /** Creates the schema when missing and applies pending migrations (migrations.ts); idempotent and safe to race. */
  migrate(): Promise<MigrationOutcome> {
    return runMigrations(this.#db, this.#schema);
  }

  /** Ends the pool if the store created it (once, however often it is called); a pool passed in stays open. */
  close(): Promise<void> {
    if (!this.#owned) return Promise.resolve();
    this.#closed ??= this.#pool.end();
    return this.#closed;
  }

  /**
   * Runs `fn` while holding a lock named `name` in this store's schema: across every instance
   * sharing the database, one `fn` per name runs at a time. For one-time setup (the CLI creates
   * the first tenant under it). The lock is a transaction-scoped advisory lock in a transaction
   * kept open on one pool connection until `fn` settles (never a session lock, which a pooler in
   * transaction mode would leave on a server connection other clients then use: docs/scaling.md).
   * @example await store.withLock('bootstrap', async () => { if ((await vault.listTenants()).length === 0) await vault.createTenant(...) });
   */
  withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const key = JSON.stringify([this.#schema, name]);
    return this.#db.holding(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1::int4, hashtext($2))', [NAMED_LOCK_CLASS, key]);
    }, fn);
  }

  // --- tenants and keys (postgres-tenants.ts) -----------------------------------------------------

  createTenant: Store['createTenant'] = (...args) => this.#tenants.createTenant(...args);
  getTenant: Store['getTenant'] = (...args) => this.#tenants.getTenant(...args);
  listTenants: Store['listTenants'] = (...args) => this.#tenants.listTenants(...args);
  insertWrappedKey: Store['insertWrappedKey'] = (...args) => this.#tenants.insertWrappedKey(...args);
  listWrappedKeys: Store['listWrappedKeys'] = (...args) => this.#tenants.listWrappedKeys(...args);

  // --- tokens -----------------------------------------------------------------------------------

  createToken(token: StoredToken, now: number, dedupeWithin?: readonly ContainerScope[]): Promise<CreateTokenResult> {
    return this.#tokens.create(token, now, dedupeWithin);
  }

  createTokens(tokens: readonly StoredToken[], now: number, dedupeWithin?: readonly ContainerScope[]): Promise<CreateTokensResult> {
    return this.#tokens.createMany(tokens, now, dedupeWithin);
  }

  getToken(tenantId: string, id: string, now: number): Promise<StoredToken | null> {
    return this.#tokens.get(tenantId, id, now);
  }

  listTokens(tenantId: string, filter: TokenFilter, page: PageRequest, now: number): Promise<PageResult<StoredToken>> {
    return this.#tokens.list(tenantId, filter, page, now);
  }

  updateToken(next: StoredToken, audit: AuditEntry, now: number, dedupeWithin?: readonly ContainerScope[]): Promise<UpdateTokenResult> {
    return this.#tokens.update(next, audit, now, dedupeWithin);
  }

  deleteToken(tenantId: string, id: string, deletedBy: string, audit: AuditEntry, now: number): Promise<boolean> {
    return this.#tokens.delete(tenantId, id, deletedBy, audit, now);
  }

  getDeletedToken(tenantId: string, id: string): Promise<DeletedTokenRecord | null> {
    return this.#tokens.getDeleted(tenantId, id);
  }

  /** Oldest expiry first; one statement per call, taking only rows no other transaction holds. */
  purgeExpiredTokens(now: number, limit: number): Promise<ExpiredTokenRecord[]> {
    return this.#tokens.purgeExpired(now, limit);
  }

  /**
   * Includes expired-but-unswept tokens: their cvc must go too. A plain read, not a claim: the
   * sweep's compare-and-set (replaceCiphertext) is what makes concurrent sweeps safe, and row locks
   * taken here would end with the statement anyway.
   */
  listCvcDue(now: number, limit: number): Promise<StoredToken[]> {
    return this.#tokens.listCvcDue(now, limit);
  }

  replaceCiphertext(
    tenantId: string,
    id: string,
    expected: Uint8Array,
    next: { ciphertext: Uint8Array; keyVersion: number; cvcPurgeAt: number | null },
  ): Promise<boolean> {
    return this.#tokens.replaceCiphertext(tenantId, id, expected, next);
  }

  listTokensBelowKeyVersion(tenantId: string, version: number, limit: number): Promise<StoredToken[]> {
    return this.#tokens.listBelowKeyVersion(tenantId, version, limit);
  }

  countTokensBelowKeyVersion(tenantId: string, version: number): Promise<number> {
    return this.#tokens.countBelowKeyVersion(tenantId, version);
  }

  // --- token intents (postgres-token-intents.ts) --------------------------------------------------

  createTokenIntent: Store['createTokenIntent'] = (...args) => this.#tokenIntents.createTokenIntent(...args);
  getTokenIntent: Store['getTokenIntent'] = (...args) => this.#tokenIntents.getTokenIntent(...args);
  deleteTokenIntent: Store['deleteTokenIntent'] = (...args) => this.#tokenIntents.deleteTokenIntent(...args);
  convertTokenIntent: Store['convertTokenIntent'] = (...args) => this.#tokenIntents.convertTokenIntent(...args);
  purgeExpiredTokenIntents: Store['purgeExpiredTokenIntents'] = (...args) => this.#tokenIntents.purgeExpiredTokenIntents(...args);

  // --- applications, keys and sessions (postgres-applications.ts) ----------------------------------

  createApplication: Store['createApplication'] = (...args) => this.#applications.createApplication(...args);
  getApplication: Store['getApplication'] = (...args) => this.#applications.getApplication(...args);
  findApplicationKeys: Store['findApplicationKeys'] = (...args) => this.#applications.findApplicationKeys(...args);
  createApplicationKey: Store['createApplicationKey'] = (...args) => this.#applications.createApplicationKey(...args);
  listApplicationKeys: Store['listApplicationKeys'] = (...args) => this.#applications.listApplicationKeys(...args);
  getApplicationKey: Store['getApplicationKey'] = (...args) => this.#applications.getApplicationKey(...args);
  deleteApplicationKey: Store['deleteApplicationKey'] = (...args) => this.#applications.deleteApplicationKey(...args);
  replaceApplicationKeys: Store['replaceApplicationKeys'] = (...args) => this.#applications.replaceApplicationKeys(...args);
  listApplications: Store['listApplications'] = (...args) => this.#applications.listApplications(...args);
  updateApplication: Store['updateApplication'] = (...args) => this.#applications.updateApplication(...args);
  deleteApplication: Store['deleteApplication'] = (...args) => this.#applications.deleteApplication(...args);
  createSession: Store['createSession'] = (...args) => this.#applications.createSession(...args);
  findSessions: Store['findSessions'] = (...args) => this.#applications.findSessions(...args);
  authorizeSession: Store['authorizeSession'] = (...args) => this.#applications.authorizeSession(...args);
  purgeExpiredSessions: Store['purgeExpiredSessions'] = (...args) => this.#applications.purgeExpiredSessions(...args);

  // --- reactor formulas and reactors (postgres-reactors.ts) -----------------------------------------

  createFormula: Store['createFormula'] = (...args) => this.#reactors.createFormula(...args);
  getFormula: Store['getFormula'] = (...args) => this.#reactors.getFormula(...args);
  listFormulas: Store['listFormulas'] = (...args) => this.#reactors.listFormulas(...args);
  updateFormula: Store['updateFormula'] = (...args) => this.#reactors.updateFormula(...args);
  deleteFormula: Store['deleteFormula'] = (...args) => this.#reactors.deleteFormula(...args);
  createReactor: Store['createReactor'] = (...args) => this.#reactors.createReactor(...args);
  getReactor: Store['getReactor'] = (...args) => this.#reactors.getReactor(...args);
  listReactors: Store['listReactors'] = (...args) => this.#reactors.listReactors(...args);
  updateReactor: Store['updateReactor'] = (...args) => this.#reactors.updateReactor(...args);
  deleteReactor: Store['deleteReactor'] = (...args) => this.#reactors.deleteReactor(...args);

  // --- idempotency (postgres-idempotency.ts) ------------------------------------------------------

  claimIdempotencyKey: Store['claimIdempotencyKey'] = (...args) => this.#idempotency.claimIdempotencyKey(...args);
  completeIdempotencyKey: Store['completeIdempotencyKey'] = (...args) => this.#idempotency.completeIdempotencyKey(...args);
  releaseIdempotencyKey: Store['releaseIdempotencyKey'] = (...args) => this.#idempotency.releaseIdempotencyKey(...args);
  purgeExpiredIdempotencyKeys: Store['purgeExpiredIdempotencyKeys'] = (...args) => this.#idempotency.purgeExpiredIdempotencyKeys(...args);

  // --- asynchronous reactor runs -----------------------------------------------------------------

  createReactorRequest(request: ReactorRequestRecord, job: JobRecord): Promise<void> {
    return this.#requests.create(request, job);
  }

  getReactorRequest(tenantId: string, id: string): Promise<ReactorRequestRecord | null> {
    return this.#requests.get(tenantId, id);
  }

  startReactorRequest(tenantId: string, id: string, now: number): Promise<boolean> {
    return this.#requests.start(tenantId, id, now);
  }

  finishReactorRequest(tenantId: string, id: string, outcome: ReactorRequestOutcome): Promise<boolean> {
    return this.#requests.finish(tenantId, id, outcome);
  }

  purgeExpiredReactorRequests(now: number, limit: number): Promise<number> {
    return this.#requests.purge(now, limit);
  }
  // --- webhooks (postgres-webhooks.ts) -----------------------------------------------------------

  createWebhook: WebhookStore['createWebhook'] = (w) => this.#webhooks.createWebhook(w);
  getWebhook: WebhookStore['getWebhook'] = (tenantId, id) => this.#webhooks.getWebhook(tenantId, id);
  listWebhooks: WebhookStore['listWebhooks'] = (tenantId, page) => this.#webhooks.listWebhooks(tenantId, page);
  listAllWebhooks: WebhookStore['listAllWebhooks'] = (tenantId, limit) => this.#webhooks.listAllWebhooks(tenantId, limit);
  updateWebhook: WebhookStore['updateWebhook'] = (w) => this.#webhooks.updateWebhook(w);
  deleteWebhook: WebhookStore['deleteWebhook'] = (tenantId, id) => this.#webhooks.deleteWebhook(tenantId, id);
  getWebhookSecret: WebhookStore['getWebhookSecret'] = (tenantId) => this.#webhooks.getWebhookSecret(tenantId);
  putWebhookSecret: WebhookStore['putWebhookSecret'] = (record, expected) => this.#webhooks.putWebhookSecret(record, expected);
  createWebhookDelivery: WebhookStore['createWebhookDelivery'] = (d) => this.#webhooks.createWebhookDelivery(d);
  getWebhookDelivery: WebhookStore['getWebhookDelivery'] = (tenantId, id) => this.#webhooks.getWebhookDelivery(tenantId, id);
  listWebhookDeliveries: WebhookStore['listWebhookDeliveries'] = (tenantId, filter, page) => this.#webhooks.listWebhookDeliveries(tenantId, filter, page);
  recordWebhookAttempt: WebhookStore['recordWebhookAttempt'] = (tenantId, id, expected, attempt, outcome) =>
    this.#webhooks.recordWebhookAttempt(tenantId, id, expected, attempt, outcome);
  restartWebhookDelivery: WebhookStore['restartWebhookDelivery'] = (tenantId, id, now) => this.#webhooks.restartWebhookDelivery(tenantId, id, now);
  purgeWebhookDeliveries: WebhookStore['purgeWebhookDeliveries'] = (before, limit) => this.#webhooks.purgeWebhookDeliveries(before, limit);

  // --- background jobs ---------------------------------------------------------------------------

  enqueueJob(job: JobRecord): Promise<boolean> {
    return this.#jobs.enqueue(job);
  }

  claimJobs(owner: string, now: number, leaseMs: number, limit: number, kinds: readonly string[]): Promise<JobRecord[]> {
    return this.#jobs.claim(owner, now, leaseMs, limit, kinds);
  }

  renewJobLease(id: string, owner: string, until: number): Promise<boolean> {
    return this.#jobs.renew(id, owner, until);
  }

  finishJob(id: string, owner: string): Promise<boolean> {
    return this.#jobs.finish(id, owner);
  }

  rescheduleJob(id: string, owner: string, runAt: number, lastError: string | null, attempts: 'keep' | 'reset'): Promise<boolean> {
    return this.#jobs.reschedule(id, owner, runAt, lastError, attempts);
  }

  countDueJobs(now: number): Promise<number> {
    return this.#jobs.countDue(now);
  }

  // --- audit (postgres-audit.ts) ----------------------------------------------------------------

  appendAudit: Store['appendAudit'] = (...args) => this.#audit.appendAudit(...args);
  listAudit: Store['listAudit'] = (...args) => this.#audit.listAudit(...args);
}
