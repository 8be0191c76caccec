/**
 * Fresh in-memory SQLite stores for the store loop (stores.ts) without running the migration chain
 * for each: the first store of a test file migrates as any store does, its database is serialized
 * right after (nothing else written yet), and every later store of the file opens a copy of that
 * image. Migrating an in-memory database took about 90 ms, opening the image well under 1 ms
 * (docs/testing.md, "How long it takes"). The copy is opened as the store would open `:memory:`
 * (the same pragmas), and closed with the store.
 */
import Database from 'better-sqlite3';
import { createSqliteStore } from '../../src/sqlite.js';
import type { SqliteStore } from '../../src/storage/sqlite/sqlite-boundary.js';
import { DEFAULT_BUSY_TIMEOUT_MS, DEFAULT_CACHE_SIZE_MIB } from '../../src/storage/sqlite/sqlite-options.js';

let image: Buffer | undefined;

export function freshSqliteStore(): SqliteStore {
  if (image === undefined) {
    const store = createSqliteStore({ filename: ':memory:' });
    const migrate = store.migrate;
    return Object.assign(store, {
      migrate: async (...args: Parameters<SqliteStore['migrate']>) => {
        const outcome = await migrate(...args);
        image ??= (store.database as unknown as Database.Database).serialize();
        return outcome;
      },
    });
  }
  const db = new Database(image);
  // What createSqliteStore sets on a database it opens itself (sqlite-open.ts), :memory: included.
  db.pragma('synchronous = FULL');
  db.pragma(`busy_timeout = ${DEFAULT_BUSY_TIMEOUT_MS}`);
  db.pragma(`cache_size = ${-DEFAULT_CACHE_SIZE_MIB * 1024}`);
  const store = createSqliteStore({ database: db });
  const close = store.close;
  return Object.assign(store, {
    close: async () => {
      await close();
      if (db.open) db.close();
    },
  });
}
