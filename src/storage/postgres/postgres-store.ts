import pg from 'pg';
import { InternalError } from '../../errors.js';
import type { Permission } from '../../permissions.js';
import { LIKE_ESCAPE, likeSubstringPattern } from '../sqlite/like-pattern.js';
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
  SessionAuthorization,
  SessionRecord,
  RecordUpdateResult,
  Store,
  StoredAuditEntry,
  StoredToken,
  TenantRecord,
  TokenFilter,
  UpdateTokenResult,
  WrappedKeyRecord,
} from '../store.js';
import { runMigrations } from './migrations.js';
import { PostgresJobs } from './postgres-jobs.js';
import { PostgresReactorRequests } from './postgres-reactor-requests.js';
import { SqlParams, runPage } from './paging.js';
import { PgExecutor, type Queryable } from './pg-executor.js';
import { quoteSchema, resolvePostgresStoreOptions, type PgPool, type PostgresStoreOptions } from './postgres-options.js';
import { PostgresCredentials } from './postgres-credentials.js';
import { PostgresTokens } from './postgres-tokens.js';
import { PostgresWebhooks } from './postgres-webhooks.js';
import type { WebhookStore } from '../webhook-records.js';
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
} from './record-rows.js';
import { recordStatements, type RecordStatements } from './record-sql.js';
import { distinct } from './token-rows.js';
import { checkLimit } from '../limit.js';

type ClaimResult = { claimed: true } | { claimed: false; existing: IdempotencyRecord };

/** Advisory lock class of `withLock`; the second key hashes the schema and the lock's name. */
export const NAMED_LOCK_CLASS = 0x74760003;

/** A clash inside a tenant being created: the caller gave two records one key (a bug, not input). */
function duplicateInitial(what: string, id: string): InternalError {
  return new InternalError(`createTenant was given a ${what} twice (${id}); nothing was written`);
}

const json = (value: unknown) => JSON.stringify(value);

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
  readonly #webhooks: PostgresWebhooks;
  readonly #jobs: PostgresJobs;
  readonly #requests: PostgresReactorRequests;
  readonly #credentials: PostgresCredentials;
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
    this.#webhooks = new PostgresWebhooks(this.#db, this.#s);
    this.#jobs = new PostgresJobs(this.#db, this.#s);
    this.#requests = new PostgresReactorRequests(this.#db, this.#s, this.#jobs);
    this.#credentials = new PostgresCredentials(this.#db, this.#s);
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
  migrate(): Promise<void> {
    return runMigrations(this.#db, this.#schema);
  }

  /** Ends the pool if the store created it (once, however often it is called); a pool passed in stays open. */
  close(): Promise<void> {
    if (!this.#owned) return Promise.resolve();
    this.#closed ??= this.#pool.end();
    return this.#closed;
  }

  /**
   * Runs `fn` while holding a session advisory lock named `name` in this store's schema: across
   * every instance sharing the database, one `fn` per name runs at a time. For one-time setup
   * (the CLI creates the first tenant under it). Holds one pool connection for the duration.
   * @example await store.withLock('bootstrap', async () => { if ((await vault.listTenants()).length === 0) await vault.createTenant(...) });
   */
  async withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return this.#db.session(async (session, discard) => {
      const key = JSON.stringify([this.#schema, name]);
      await session.query('SELECT pg_advisory_lock($1::int4, hashtext($2))', [NAMED_LOCK_CLASS, key]);
      try {
        return await fn();
      } finally {
        // A connection that cannot unlock is closed instead, which releases the lock too.
        await session.query('SELECT pg_advisory_unlock($1::int4, hashtext($2))', [NAMED_LOCK_CLASS, key]).catch(discard);
      }
    });
  }

  // --- tenants and keys -------------------------------------------------------------------------

  /** 'exists' when the tenant id is taken. With `initial`: one transaction (see Store). */
  async createTenant(tenant: TenantRecord, initial?: InitialTenantRecords): Promise<Inserted> {
    if (initial === undefined) return this.#insertTenant(this.#db, tenant);
    return this.#db.transaction(async (tx) => {
      if ((await this.#insertTenant(tx, tenant)) === 'exists') return 'exists';
      // A new tenant has no applications or keys: a clash below is the caller's fault, and rolls back.
      if ((await this.#insertApplication(tx, initial.application)) === 'exists') throw duplicateInitial('application', initial.application.id);
      await this.#credentials.insertKey(tx, initial.key);
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

  // --- tokens -----------------------------------------------------------------------------------

  createToken(token: StoredToken, now: number): Promise<CreateTokenResult> {
    return this.#tokens.create(token, now);
  }

  createTokens(tokens: readonly StoredToken[], now: number): Promise<CreateTokensResult> {
    return this.#tokens.createMany(tokens, now);
  }

  getToken(tenantId: string, id: string, now: number): Promise<StoredToken | null> {
    return this.#tokens.get(tenantId, id, now);
  }

  listTokens(tenantId: string, filter: TokenFilter, page: PageRequest, now: number): Promise<PageResult<StoredToken>> {
    return this.#tokens.list(tenantId, filter, page, now);
  }

  updateToken(next: StoredToken, audit: AuditEntry, now: number): Promise<UpdateTokenResult> {
    return this.#tokens.update(next, audit, now);
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

  // --- applications ----------------------------------------------------------------------------

  /** The application and its first key in one transaction. */
  createApplication(app: ApplicationRecord, key: ApplicationKeyRecord): Promise<Inserted> {
    return this.#db.transaction(async (tx) => {
      if ((await this.#insertApplication(tx, app)) === 'exists') return 'exists';
      await this.#credentials.insertKey(tx, key);
      return 'created';
    });
  }

  async #insertApplication(db: Queryable, app: ApplicationRecord): Promise<Inserted> {
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
    ]);
    return result.rowCount === 0 ? 'exists' : 'created';
  }

  async getApplication(tenantId: string, id: string): Promise<ApplicationRecord | null> {
    const { rows } = await this.#db.query(this.#sql.getApplication, [tenantId, id]);
    return rows.length === 0 ? null : toApplication(rows[0]!);
  }

  findApplicationKeys(keyLookup: string): Promise<ApplicationKeyMatch[]> {
    return this.#credentials.findKeys(keyLookup);
  }

  createApplicationKey(key: ApplicationKeyRecord, max: number): Promise<'created' | 'not_found' | 'limit'> {
    return this.#credentials.createKey(key, max);
  }

  listApplicationKeys(tenantId: string, applicationId: string): Promise<ApplicationKeyRecord[]> {
    return this.#credentials.listKeys(tenantId, applicationId);
  }

  getApplicationKey(tenantId: string, applicationId: string, keyId: string): Promise<ApplicationKeyRecord | null> {
    return this.#credentials.getKey(tenantId, applicationId, keyId);
  }

  deleteApplicationKey(tenantId: string, applicationId: string, keyId: string): Promise<'deleted' | 'not_found' | 'last_key'> {
    return this.#credentials.deleteKey(tenantId, applicationId, keyId);
  }

  replaceApplicationKeys(key: ApplicationKeyRecord, modifiedBy: string): Promise<boolean> {
    return this.#credentials.replaceKeys(key, modifiedBy);
  }

  /** In creation order. */
  listApplications(tenantId: string, page: PageRequest): Promise<PageResult<ApplicationRecord>> {
    return runPage(this.#db, this.#tenantList(APPLICATION_COLUMNS, 'applications', tenantId), page, toApplication);
  }

  /** Writes only the columns of the fields given; `keep`: see Store. */
  async updateApplication(
    tenantId: string,
    id: string,
    changes: ApplicationChanges,
    keep?: readonly Permission[],
  ): Promise<{ status: 'updated'; record: ApplicationRecord } | { status: 'not_found' } | { status: 'last_holder' }> {
    const columns = applicationColumns(changes);
    const update = async (db: Queryable) => {
      const { rows } = await db.query(...this.#updateSql('applications', APPLICATION_COLUMNS, tenantId, id, columns, []));
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
    return record === null ? { status: 'not_found' } : { status: 'updated', record };
  }

  /**
   * One UPDATE … RETURNING of `columns` on the tenant's row `id`, under `condition` (a precondition
   * whose values follow the columns'); returns [text, values].
   */
  #updateSql(
    table: 'applications' | 'formulas' | 'reactors',
    returning: string,
    tenantId: string,
    id: string,
    columns: readonly ColumnChange[],
    condition: readonly { sql: (placeholder: string) => string; value: unknown }[],
  ): [string, unknown[]] {
    const values: unknown[] = [];
    const bind = (value: unknown) => `$${values.push(value)}`;
    const set = columns.map((c) => `${c.column} = ${bind(c.value)}${c.json ? '::json' : ''}`).join(', ');
    const where = [`t.tenant_id = ${bind(tenantId)}`, `t.id = ${bind(id)}`, ...condition.map((c) => c.sql(bind(c.value)))];
    return [`UPDATE ${this.#s}.${table} AS t SET ${set} WHERE ${where.join(' AND ')} RETURNING ${returning}`, values];
  }

  /** `changed` or `not_found` after an update that matched no row under a precondition. */
  async #missed(table: 'formulas' | 'reactors', tenantId: string, id: string): Promise<{ status: 'changed' } | { status: 'not_found' }> {
    const { rows } = await this.#db.query(`SELECT 1 FROM ${this.#s}.${table} WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
    return rows.length === 0 ? { status: 'not_found' } : { status: 'changed' };
  }

  async deleteApplication(tenantId: string, id: string, keep?: readonly Permission[]): Promise<'deleted' | 'not_found' | 'last_holder'> {
    const remove = async (db: Queryable) => (await db.query(this.#sql.deleteApplication, [tenantId, id])).rowCount === 1;
    const outcome = keep === undefined || keep.length === 0 ? await remove(this.#db) : await this.#db.transaction((tx) => this.#guarded(tx, tenantId, id, keep, null, () => remove(tx)));
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

  // --- sessions ---------------------------------------------------------------------------------

  /** 'exists' (nothing written) when the id or the tenant's nonce hash is taken. */
  createSession(session: SessionRecord): Promise<Inserted> {
    return this.#credentials.createSession(session);
  }

  findSessions(keyLookup: string): Promise<SessionRecord[]> {
    return this.#credentials.findSessions(keyLookup);
  }

  authorizeSession(tenantId: string, nonceHash: string, authorization: SessionAuthorization, now: number): Promise<AuthorizeSessionResult> {
    return this.#credentials.authorizeSession(tenantId, nonceHash, authorization, now);
  }

  purgeExpiredSessions(now: number, limit: number): Promise<number> {
    return this.#credentials.purgeExpiredSessions(now, limit);
  }

  // --- reactor formulas and reactors ------------------------------------------------------------

  async createFormula(formula: FormulaRecord): Promise<Inserted> {
    const result = await this.#db.query(this.#sql.insertFormula, [
      formula.tenantId,
      formula.id,
      formula.name,
      formula.description ?? null,
      formula.code,
      json(formula.configuration ?? []),
      json(formula.requestParameters ?? []),
      formula.createdBy ?? null,
      formula.createdAt,
      formula.modifiedBy ?? null,
      formula.modifiedAt ?? null,
    ]);
    return result.rowCount === 0 ? 'exists' : 'created';
  }

  async getFormula(tenantId: string, id: string): Promise<FormulaRecord | null> {
    const { rows } = await this.#db.query(this.#sql.getFormula, [tenantId, id]);
    return rows.length === 0 ? null : toFormula(rows[0]!);
  }

  listFormulas(tenantId: string, page: PageRequest): Promise<PageResult<FormulaRecord>> {
    return runPage(this.#db, this.#tenantList(FORMULA_COLUMNS, 'formulas', tenantId), page, toFormula);
  }

  /** Writes only the columns of the fields given, under the precondition when there is one: one statement. */
  async updateFormula(
    tenantId: string,
    id: string,
    changes: FormulaChanges,
    expected?: Pick<FormulaRecord, 'code' | 'configuration' | 'requestParameters'>,
  ): Promise<RecordUpdateResult<FormulaRecord>> {
    const condition =
      expected === undefined
        ? []
        : formulaExpectation(expected).map((value, i) => ({ sql: (p: string) => `t.${['code', 'configuration::text', 'request_parameters::text'][i]} = ${p}`, value }));
    const { rows } = await this.#db.query(...this.#updateSql('formulas', FORMULA_COLUMNS, tenantId, id, formulaColumns(changes), condition));
    if (rows.length === 1) return { status: 'updated', record: toFormula(rows[0]!) };
    return expected === undefined ? { status: 'not_found' } : this.#missed('formulas', tenantId, id);
  }

  /**
   * Locks the formula's row, then looks for a reactor: a reactor write holds a share lock on its
   * formula until it commits (createReactor, updateReactor), so the look sees every reactor that
   * will reference the formula, committed or about to be.
   */
  deleteFormula(tenantId: string, id: string): Promise<'deleted' | 'not_found' | 'in_use'> {
    return this.#db.transaction(async (tx) => {
      if ((await tx.query(this.#sql.lockFormula, [tenantId, id])).rows.length === 0) return 'not_found';
      if ((await tx.query(this.#sql.formulaInUse, [tenantId, id])).rows.length > 0) return 'in_use';
      await tx.query(this.#sql.deleteFormula, [tenantId, id]);
      return 'deleted';
    });
  }

  async createReactor(reactor: ReactorRecord): Promise<Inserted> {
    const inserted = await this.#db.transaction(async (tx) => {
      // A reactor with inline code references no formula, and locks none.
      if (reactor.formulaId !== null) await tx.query(this.#sql.shareFormula, [reactor.tenantId, reactor.formulaId]);
      const result = await tx.query(this.#sql.insertReactor, [
        reactor.tenantId,
        reactor.id,
        reactor.name,
        reactor.name.toLowerCase(),
        reactor.formulaId,
        reactor.code,
        json(reactor.configuration ?? {}),
        reactor.applicationId ?? null,
        reactor.createdBy ?? null,
        reactor.createdAt,
        reactor.modifiedBy ?? null,
        reactor.modifiedAt ?? null,
      ]);
      return result.rowCount === 1;
    });
    return inserted ? 'created' : 'exists';
  }

  async getReactor(tenantId: string, id: string): Promise<ReactorRecord | null> {
    const { rows } = await this.#db.query(this.#sql.getReactor, [tenantId, id]);
    return rows.length === 0 ? null : toReactor(rows[0]!);
  }

  /** In creation order; `name` is a case-insensitive substring in which `*` matches any run. */
  listReactors(tenantId: string, filter: ReactorFilter, page: PageRequest): Promise<PageResult<ReactorRecord>> {
    const query = this.#tenantList(REACTOR_COLUMNS, 'reactors', tenantId);
    if (filter?.ids !== undefined) query.where.push(`t.id = ANY(${query.params.add(distinct(filter.ids), 'text[]')})`);
    if (filter?.name !== undefined && filter.name !== null) {
      // Lower-cased in JS like name_lower, so the match does not depend on the database's locale.
      // The escape character is bound too: a backslash literal would depend on standard_conforming_strings.
      const pattern = query.params.add(likeSubstringPattern(filter.name), 'text');
      query.where.push(`t.name_lower LIKE ${pattern} ESCAPE ${query.params.add(LIKE_ESCAPE, 'text')}`);
    }
    return runPage(this.#db, query, page, toReactor);
  }

  /**
   * Writes only the columns of the fields given, under the precondition when there is one: one
   * statement. The formula does not change, so deleteFormula sees this reactor either way.
   */
  async updateReactor(tenantId: string, id: string, changes: ReactorChanges, expected?: { applicationId: string | null }): Promise<RecordUpdateResult<ReactorRecord>> {
    const condition = expected === undefined ? [] : [{ sql: (p: string) => `t.application_id IS NOT DISTINCT FROM ${p}::text`, value: expected.applicationId }];
    const { rows } = await this.#db.query(...this.#updateSql('reactors', REACTOR_COLUMNS, tenantId, id, reactorColumns(changes), condition));
    if (rows.length === 1) return { status: 'updated', record: toReactor(rows[0]!) };
    return expected === undefined ? { status: 'not_found' } : this.#missed('reactors', tenantId, id);
  }

  async deleteReactor(tenantId: string, id: string): Promise<boolean> {
    return (await this.#db.query(this.#sql.deleteReactor, [tenantId, id])).rowCount === 1;
  }

  // --- idempotency ------------------------------------------------------------------------------

  claimIdempotencyKey(record: IdempotencyRecord, now: number): Promise<ClaimResult> {
    return this.#db.transaction(async (tx): Promise<ClaimResult> => {
      const claim = await tx.query(this.#sql.claimIdempotency, [
        record.tenantId,
        record.applicationId,
        record.key,
        record.requestHash,
        record.createdAt,
        record.expiresAt,
        now,
      ]);
      if (claim.rowCount === 1) return { claimed: true };
      // Not claimed: an unexpired record exists, and the claim locked it (record-sql.ts).
      const { rows } = await tx.query(this.#sql.getIdempotency, [record.tenantId, record.applicationId, record.key]);
      return { claimed: false, existing: toIdempotency(rows[0]!) };
    });
  }

  /** Only the claim's in-flight record is completed: a done one keeps its first response. One transaction (see Store). */
  completeIdempotencyKey(claim: IdempotencyClaim, response: IdempotencyResponse): Promise<void> {
    const { tenantId, applicationId, key, claimedAt } = claim;
    const sql = this.#sql;
    return this.#db.transaction(async (tx) => {
      if ((await tx.query(sql.lockInFlightIdempotency, [tenantId, applicationId, key, claimedAt])).rows.length === 0) return;
      const ids = [...new Set(response.tokenIds)];
      const { rows } = ids.length === 0 ? { rows: [] } : await tx.query(sql.idempotencyTokenTimes, [tenantId, ids]);
      if (rows.length < ids.length && (await tx.query(sql.idempotencyTokenDeleted, [tenantId, ids])).rows.length > 0) {
        await tx.query(sql.withdrawIdempotency, [response.expiresAt, tenantId, applicationId, key, claimedAt]);
        return;
      }
      let withdrawAt: number | null = null;
      for (const row of rows) {
        for (const at of [row['expires_at'], row['cvc_purge_at']] as (number | null)[]) if (at !== null && (withdrawAt === null || at < withdrawAt)) withdrawAt = at;
      }
      await tx.query(sql.completeIdempotency, [response.status, response.body, response.expiresAt, withdrawAt, tenantId, applicationId, key, claimedAt]);
      if (rows.length > 0) await tx.query(sql.insertIdempotencyTokens, [tenantId, rows.map((row) => row['id'] as string), applicationId, key, claimedAt]);
    });
  }

  /** Only the claim's in-flight record is released: a done one keeps answering retries. */
  async releaseIdempotencyKey(claim: IdempotencyClaim): Promise<void> {
    await this.#db.query(this.#sql.releaseIdempotency, [claim.tenantId, claim.applicationId, claim.key, claim.claimedAt]);
  }

  async purgeExpiredIdempotencyKeys(now: number, limit: number): Promise<number> {
    return (await this.#db.query(this.#sql.purgeExpiredIdempotency, [now, checkLimit(limit)])).rowCount ?? 0;
  }

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

  claimJobs(owner: string, now: number, leaseMs: number, limit: number): Promise<JobRecord[]> {
    return this.#jobs.claim(owner, now, leaseMs, limit);
  }

  renewJobLease(id: string, owner: string, until: number): Promise<boolean> {
    return this.#jobs.renew(id, owner, until);
  }

  finishJob(id: string, owner: string): Promise<boolean> {
    return this.#jobs.finish(id, owner);
  }

  rescheduleJob(id: string, owner: string, runAt: number, lastError: string | null): Promise<boolean> {
    return this.#jobs.reschedule(id, owner, runAt, lastError);
  }

  countDueJobs(now: number): Promise<number> {
    return this.#jobs.countDue(now);
  }

  // --- audit ------------------------------------------------------------------------------------

  /** One statement for the whole batch, whatever its size (the entries bind as seven arrays). */
  async appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.#db.query(this.#sql.appendAudit, [
      entries.map((e) => e.tenantId),
      entries.map((e) => e.actor),
      entries.map((e) => e.operation),
      entries.map((e) => e.resourceId ?? null),
      entries.map((e) => e.outcome),
      entries.map((e) => e.detail ?? null),
      entries.map((e) => e.at),
    ]);
  }

  /**
   * Oldest first (ascending seq), through the (tenant_id, seq) index. Entries are numbered when
   * inserted, not when committed, so an entry committed late by a concurrent writer may carry a
   * seq below a cursor already handed out; a reader paging at that moment does not see it.
   */
  listAudit(tenantId: string, filter: AuditFilter, page: PageRequest): Promise<PageResult<StoredAuditEntry>> {
    const query = this.#tenantList(AUDIT_COLUMNS, 'audit_log', tenantId);
    if (filter?.resourceId !== undefined) query.where.push(`t.resource_id = ${query.params.add(filter.resourceId, 'text')}`);
    if (filter?.actor !== undefined) query.where.push(`t.actor = ${query.params.add(filter.actor, 'text')}`);
    if (filter?.operation !== undefined) query.where.push(`t.operation = ${query.params.add(filter.operation, 'text')}`);
    return runPage(this.#db, query, page, toAudit);
  }

  #tenantList(columns: string, table: string, tenantId: string) {
    const params = new SqlParams();
    return { columns, from: `FROM ${this.#s}.${table} t`, where: [`t.tenant_id = ${params.add(tenantId, 'text')}`], params };
  }
}

/**
 * Creates the PostgreSQL store. Options are validated once (ValidationError naming the option);
 * nothing connects until the first query. Call `migrate()` before first use (`createVault` does).
 * @example
 * const store = createPostgresStore({ connectionString: process.env.DATABASE_URL });
 * const isolated = createPostgresStore({ connectionString: process.env.DATABASE_URL, schema: 'vault' });
 * const shared = createPostgresStore({ pool: myPgPool }); // not ended by store.close()
 */
export function createPostgresStore(options: PostgresStoreOptions): PostgresStore {
  const resolved = resolvePostgresStoreOptions(options);
  if (resolved.pool !== undefined) return new PostgresStore(resolved.pool, resolved.schema, false);
  const pool = new pg.Pool({ connectionString: resolved.connectionString, max: resolved.max, application_name: 'tokenvault' });
  // An idle connection that breaks (a server restart, a network cut) is reported on the pool; with
  // no listener, Node would end the process. The pool drops the connection and opens another on
  // the next query, which reports any lasting failure.
  pool.on('error', () => undefined);
  return new PostgresStore(pool satisfies PgPool, resolved.schema, true);
}
