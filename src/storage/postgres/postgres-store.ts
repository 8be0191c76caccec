import type { MigrateOptions, MigrationOutcome, Store } from '../store.js';
import { bindMethods, bindPart } from '../store-parts.js';
import { runMigrations } from './migrations.js';
import { PgExecutor } from './pg-executor.js';
import { quoteSchema, type PgPool, type PostgresTimeouts } from './postgres-options.js';
import { PostgresAuditAppend } from './postgres-audit.js';
import { auditChainStatements, sealInto } from './postgres-audit-chain.js';
import { AUDIT_SHARED, type AuditShared } from '../areas/audit.js';
import { IDEMPOTENCY } from '../areas/idempotency.js';
import { JOBS_AREA } from '../areas/jobs.js';
import { PROXIES_AREA } from '../areas/proxies.js';
import { REACTOR_REQUESTS } from '../areas/reactor-requests.js';
import { APPLICATIONS_AREA } from '../areas/applications.js';
import { CREDENTIALS } from '../areas/credentials.js';
import { TENANTS_AREA } from '../areas/tenants.js';
import { TOKEN_INTENTS } from '../areas/token-intents.js';
import { TOKENS_PER_STORE, TOKENS_SHARED, type TokensShared } from '../areas/tokens.js';
import { REACTORS_AREA } from '../areas/reactors.js';
import { WEBHOOKS_AREA } from '../areas/webhooks.js';
import { PostgresOperations } from './postgres-operations.js';
import { PostgresTokens } from './postgres-tokens.js';

/** Advisory lock class of `withLock`; the second key hashes the schema and the lock's name. */
export const NAMED_LOCK_CLASS = 0x74760003;

/** The PostgreSQL store as callers see it: the Store contract, plus its pool and schema. */
export type PostgresStore = Store & {
  withLock<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** The pool, for diagnostics and backups. Do not write to the store's tables. */
  readonly pool: PgPool;
  /** The schema holding the store's tables. */
  readonly schema: string;
};

/**
 * The PostgreSQL Store (pg): one part per area (store-parts.ts) joined here. Stateless apart from
 * its pool: any number of instances, in any number of processes, may share one database; every
 * guarantee of the Store interface holds across them. Build it with `createPostgresStore`;
 * `owned`: whether `close()` ends the pool; `timeouts`: the bounds of its statements (docs/storage.md, "Timeouts").
 */
export function composePostgresStore(pool: PgPool, schema: string, owned: boolean, preparedStatements: boolean, timeouts?: PostgresTimeouts): PostgresStore {
  const db = new PgExecutor(pool, { preparedStatements, ...(timeouts === undefined ? {} : { timeouts }) });
  const s = quoteSchema(schema);
  const tokens = new PostgresTokens(db, schema, s);
  const chain = auditChainStatements(s);
  // A token intent's conversion creates its token, and retention seals, on their transactions' connections (sql/operation.ts, embedded calls).
  const operations = new PostgresOperations(db, s, {
    createToken: (tx, token, now, within) => tokens.createInTransaction(tx, token, now, within),
    sealAudit: (tx, fresh, sealer) => sealInto(tx, chain, fresh, sealer),
  });
  const append = new PostgresAuditAppend(db, chain);
  let closed: Promise<void> | undefined;
  const store = {
    ...bindPart('tenants', operations.part(TENANTS_AREA)),
    ...bindPart('tokens', { ...operations.part<'tokens', TokensShared>(TOKENS_SHARED), ...bindMethods(tokens, TOKENS_PER_STORE) }),
    ...bindPart('tokenIntents', operations.part(TOKEN_INTENTS)),
    ...bindPart('applications', operations.part(APPLICATIONS_AREA)),
    ...bindPart('credentials', operations.part(CREDENTIALS)),
    ...bindPart('reactors', operations.part(REACTORS_AREA)),
    ...bindPart('proxies', operations.part(PROXIES_AREA)),
    ...bindPart('reactorRequests', operations.part(REACTOR_REQUESTS)),
    ...bindPart('idempotency', operations.part(IDEMPOTENCY)),
    ...bindPart('jobs', operations.part(JOBS_AREA)),
    ...bindPart('webhooks', operations.part(WEBHOOKS_AREA)),
    ...bindPart('audit', { ...operations.part<'audit', AuditShared>(AUDIT_SHARED), appendAudit: (entries, sealer) => append.appendAudit(entries, sealer) }),
    pool,
    schema,
    /** Creates the schema when missing and applies pending migrations (migrations.ts); idempotent and safe to race. */
    migrate: (options?: MigrateOptions): Promise<MigrationOutcome> => runMigrations(db, schema, undefined, options),
    /** Ends the pool if the store created it (once, however often it is called); a pool passed in stays open. */
    close: (): Promise<void> => {
      if (!owned) return Promise.resolve();
      closed ??= pool.end();
      return closed;
    },
    withLock: <T>(name: string, fn: () => Promise<T>): Promise<T> => withLock(db, schema, name, fn),
  } satisfies PostgresStore;
  return store;
}

/**
 * Runs `fn` while holding a lock named `name` in this store's schema: across every instance
 * sharing the database, one `fn` per name runs at a time. For one-time setup (the CLI creates
 * the first tenant under it). The lock is a transaction-scoped advisory lock in a transaction
 * kept open on one pool connection until `fn` settles (never a session lock, which a pooler in
 * transaction mode would leave on a server connection other clients then use: docs/scaling.md).
 * @example await store.withLock('bootstrap', async () => { if ((await store.listTenants()).length === 0) await vault.createTenant(...) });
 */
function withLock<T>(db: PgExecutor, schema: string, name: string, fn: () => Promise<T>): Promise<T> {
  const key = JSON.stringify([schema, name]);
  return db.holding(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1::int4, hashtext($2))', [NAMED_LOCK_CLASS, key]);
  }, fn);
}
