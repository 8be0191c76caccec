/**
 * `tokenvault/postgres`: the PostgreSQL store (pg), for vaults whose instances share a database.
 * @example
 * import { createPostgresStore } from 'tokenvault/postgres';
 * const vault = await createVault({ store: createPostgresStore({ connectionString: process.env.DATABASE_URL }), masterKey });
 */
export { createPostgresStore } from './storage/postgres/postgres-open.js';
export type { PostgresStore } from './storage/postgres/postgres-store.js';
export type { PgPool, PgPoolClient, PgQueryConfig, PgQueryResult, PostgresStoreOptions } from './storage/postgres/postgres-options.js';
export { redactConnectionString } from './storage/postgres/pg-errors.js';
