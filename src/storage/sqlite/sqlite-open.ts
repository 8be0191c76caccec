import Database from 'better-sqlite3';
import type { SqliteStore } from './sqlite-boundary.js';
import { createDatabaseFile, resolveSqliteStoreOptions, type BetterSqlite3Database, type SqliteStoreOptions } from './sqlite-options.js';
import { composeSqliteStore, SqliteStoreCore } from './sqlite-store.js';

/**
 * At synchronous=NORMAL, pages of WAL after which a commit checkpoints (SQLite's default is 1000).
 * At NORMAL the checkpoints are the only fsyncs (of the WAL, then of the database file), and a token
 * creation dirties about six pages, so at the default a creation in every few hundred paid two fsyncs,
 * which were most of the cost of creations; more pages between checkpoints bring the store close
 * to a raw insert's rate (docs/performance.md, "Figures behind the code's choices"). The cost: the WAL file grows to about 40 MB
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
  return composeSqliteStore(openSqliteStoreCore(options));
}

/** The synchronous core on its database, without the boundary: for the store's own tests. */
export function openSqliteStoreCore(options: SqliteStoreOptions = {}): SqliteStoreCore {
  const resolved = resolveSqliteStoreOptions(options);
  const owned = resolved.database === undefined;
  if (owned) createDatabaseFile(resolved.filename);
  const db = resolved.database ?? (new Database(resolved.filename) satisfies BetterSqlite3Database);
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
