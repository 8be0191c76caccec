import pg from 'pg';
import { resolvePostgresStoreOptions, type PgPool, type PostgresStoreOptions } from './postgres-options.js';
import { composePostgresStore, type PostgresStore } from './postgres-store.js';

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
  if (resolved.pool !== undefined) return composePostgresStore(resolved.pool, resolved.schema, false, resolved.preparedStatements);
  const pool = new pg.Pool({ connectionString: resolved.connectionString, max: resolved.max, application_name: 'tokenvault' });
  // An idle connection that breaks (a server restart, a network cut) is reported on the pool; with
  // no listener, Node would end the process. The pool drops the connection and opens another on
  // the next query, which reports any lasting failure.
  pool.on('error', () => undefined);
  return composePostgresStore(pool satisfies PgPool, resolved.schema, true, resolved.preparedStatements);
}
