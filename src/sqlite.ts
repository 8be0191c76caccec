/**
 * `tokenvault/sqlite`: the embedded SQLite store (better-sqlite3).
 * @example
 * import { createSqliteStore } from 'tokenvault/sqlite';
 * const vault = await createVault({ store: createSqliteStore({ filename: 'vault.db' }), masterKey });
 */
export { createSqliteStore } from './storage/sqlite/sqlite-open.js';
export type { SqliteStore } from './storage/sqlite/sqlite-boundary.js';
export type { BetterSqlite3Database, SqliteStoreOptions } from './storage/sqlite/sqlite-options.js';
