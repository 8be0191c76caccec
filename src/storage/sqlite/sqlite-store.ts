import type { MigrateOptions, MigrationOutcome } from '../store.js';
import { boundaryMethod, boundaryPart, type SqliteStore } from './sqlite-boundary.js';
import { runMigrations } from './migrations.js';
import type { BetterSqlite3Database } from './sqlite-options.js';
import { SqliteAuditAppend } from './sqlite-audit.js';
import { SqliteAuditChain } from './sqlite-audit-chain.js';
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
import { bindMethods } from '../store-parts.js';
import { REACTORS_AREA } from '../areas/reactors.js';
import { WEBHOOKS_AREA } from '../areas/webhooks.js';
import type { SqlitePart } from './sqlite-boundary.js';
import { SqliteOperations } from './sqlite-operations.js';
import { SqliteTokens } from './sqlite-tokens.js';
import { StatementCache } from './statement-cache.js';

/**
 * The SQLite store's synchronous core (better-sqlite3): one part per area (store-parts.ts), each
 * method one atomic operation answered synchronously so transactions can compose them. Not a Store
 * itself: `composeSqliteStore` puts the asynchronous boundary around its parts (sqlite-boundary.ts).
 */
export class SqliteStoreCore {
  readonly #db: BetterSqlite3Database;
  readonly #owned: boolean;
  readonly tenants: SqlitePart<'tenants'>;
  /** Synchronous but for createToken (group commit): the shared operations' part joined with SqliteTokens' own methods. */
  readonly tokens: Pick<SqlitePart<'tokens'>, TokensShared> & Pick<SqliteTokens, (typeof TOKENS_PER_STORE)[number]>;
  readonly #tokens: SqliteTokens;
  readonly tokenIntents: SqlitePart<'tokenIntents'>;
  readonly applications: SqlitePart<'applications'>;
  readonly credentials: SqlitePart<'credentials'>;
  readonly reactors: SqlitePart<'reactors'>;
  readonly proxies: SqlitePart<'proxies'>;
  readonly reactorRequests: SqlitePart<'reactorRequests'>;
  readonly idempotency: SqlitePart<'idempotency'>;
  readonly jobs: SqlitePart<'jobs'>;
  readonly webhooks: SqlitePart<'webhooks'>;
  readonly audit: SqlitePart<'audit'>;

  /** Prefer `createSqliteStore`. `owned`: whether `close()` closes the database. */
  constructor(db: BetterSqlite3Database, owned: boolean) {
    this.#db = db;
    this.#owned = owned;
    const statements = new StatementCache(db);
    const readTx = db.transaction((fn: () => unknown) => fn());
    const read = <R>(fn: () => R): R => readTx.deferred(fn) as R;
    const tokens = new SqliteTokens(db, statements, read);
    this.#tokens = tokens;
    const chain = new SqliteAuditChain(statements);
    // A token intent's conversion creates its token, and retention seals, inside their own transactions (sql/operation.ts, embedded calls).
    const operations = new SqliteOperations(db, statements, {
      createToken: (token, now, within) => tokens.createInTransaction(token, now, within),
      sealAudit: (fresh, sealer) => chain.seal(fresh, sealer),
    });
    this.tenants = operations.part(TENANTS_AREA);
    this.tokens = { ...operations.part<'tokens', TokensShared>(TOKENS_SHARED), ...bindMethods(tokens, TOKENS_PER_STORE) };
    this.tokenIntents = operations.part(TOKEN_INTENTS);
    this.applications = operations.part(APPLICATIONS_AREA);
    this.credentials = operations.part(CREDENTIALS);
    this.reactors = operations.part(REACTORS_AREA);
    this.proxies = operations.part(PROXIES_AREA);
    this.idempotency = operations.part(IDEMPOTENCY);
    this.jobs = operations.part(JOBS_AREA);
    this.reactorRequests = operations.part(REACTOR_REQUESTS);
    this.webhooks = operations.part(WEBHOOKS_AREA);
    const append = new SqliteAuditAppend(db, statements, chain);
    this.audit = { ...operations.part<'audit', AuditShared>(AUDIT_SHARED), appendAudit: (entries, sealer) => append.appendAudit(entries, sealer) };
  }

  /** The underlying connection, for backups (`database.backup(...)`) and diagnostics. Do not write to the store's tables. */
  get database(): BetterSqlite3Database {
    return this.#db;
  }

  migrate(options?: MigrateOptions): MigrationOutcome {
    return runMigrations(this.#db, undefined, options);
  }

  /** Writes the pending group commit, then closes the database if the store opened it; a database passed in stays open. Idempotent. */
  close(): void {
    if (this.#db.open) this.#tokens.flush();
    if (this.#owned && this.#db.open) this.#db.close();
  }
}

/** The SQLite Store: the core's parts joined, each method behind the boundary (sqlite-boundary.ts). */
export function composeSqliteStore(core: SqliteStoreCore): SqliteStore {
  const database = core.database;
  return {
    ...boundaryPart('tenants', core.tenants),
    ...boundaryPart('tokens', core.tokens),
    ...boundaryPart('tokenIntents', core.tokenIntents),
    ...boundaryPart('applications', core.applications),
    ...boundaryPart('credentials', core.credentials),
    ...boundaryPart('reactors', core.reactors),
    ...boundaryPart('proxies', core.proxies),
    ...boundaryPart('reactorRequests', core.reactorRequests),
    ...boundaryPart('idempotency', core.idempotency),
    ...boundaryPart('jobs', core.jobs),
    ...boundaryPart('webhooks', core.webhooks),
    ...boundaryPart('audit', core.audit),
    // The connection is better-sqlite3's Database: BetterSqlite3Database is the part of it the store uses.
    database: database as SqliteStore['database'],
    migrate: boundaryMethod(core, (options?: unknown) => core.migrate(options as MigrateOptions | undefined)) as (options?: MigrateOptions) => Promise<MigrationOutcome>,
    close: boundaryMethod(core, () => core.close()) as () => Promise<void>,
  } satisfies SqliteStore;
}
