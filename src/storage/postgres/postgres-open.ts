import pg from 'pg';
import { resolvePostgresStoreOptions, type PgPool, type PostgresStoreOptions, type ResolvedPostgresStoreOptions } from './postgres-options.js';
import { composePostgresStore, type PostgresStore } from './postgres-store.js';
import { StartupFallbackPool } from './startup-fallback-pool.js';

/**
 * Creates the PostgreSQL store. Options are validated once (ValidationError naming the option);
 * nothing connects until the first query. Call `migrate()` before first use (`createVault` does).
 * @example
 * const store = createPostgresStore({ connectionString: process.env.DATABASE_URL });
 * const isolated = createPostgresStore({ connectionString: process.env.DATABASE_URL, schema: 'vault' });
 * const bounded = createPostgresStore({ connectionString: process.env.DATABASE_URL, statementTimeoutMs: 5000, lockTimeoutMs: 1000 });
 * const shared = createPostgresStore({ pool: myPgPool }); // not ended by store.close()
 */
export function createPostgresStore(options: PostgresStoreOptions): PostgresStore {
  const resolved = resolvePostgresStoreOptions(options);
  const { timeouts } = resolved;
  if (resolved.pool !== undefined) return composePostgresStore(resolved.pool, resolved.schema, false, resolved.preparedStatements, timeouts);
  const startup = startupParameters(resolved);
  const pool = new StartupFallbackPool(
    (withStartup) => {
      const created = new pg.Pool({
        connectionString: resolved.connectionString,
        max: resolved.max,
        application_name: 'tokenvault',
        // Opening a connection, and waiting for a free one of the pool (pg-pool applies it to both).
        ...(timeouts.connectTimeoutMs > 0 ? { connectionTimeoutMillis: timeouts.connectTimeoutMs } : {}),
        ...(withStartup ? startup : {}),
      });
      // An idle connection that breaks (a server restart, a network cut) is reported on the pool; with
      // no listener, Node would end the process. The pool drops the connection and opens another on
      // the next query, which reports any lasting failure.
      created.on('error', () => undefined);
      return created;
    },
    Object.keys(startup).length > 0,
  );
  return composePostgresStore(pool satisfies PgPool, resolved.schema, true, resolved.preparedStatements, timeouts);
}

/** The session defaults sent when connecting (pg's client options); a 0 is left to the server. */
function startupParameters({ timeouts }: ResolvedPostgresStoreOptions): pg.PoolConfig {
  const parameters: pg.PoolConfig = {};
  if (timeouts.statementTimeoutMs > 0) parameters.statement_timeout = timeouts.statementTimeoutMs;
  if (timeouts.lockTimeoutMs > 0) parameters.lock_timeout = timeouts.lockTimeoutMs;
  if (timeouts.idleInTransactionTimeoutMs > 0) parameters.idle_in_transaction_session_timeout = timeouts.idleInTransactionTimeoutMs;
  return parameters;
}
