import { open } from 'node:fs/promises';
import type { BetterSqlite3Database } from './sqlite-options.js';
import type { StatementCache } from './statement-cache.js';

/** `PRAGMA synchronous` as SQLite reports it: 2 is FULL. */
const FULL = 2;

/**
 * Commits a transaction whose caller can wait for the disk without the event loop waiting too.
 *
 * At synchronous=FULL (the default of `tokenvault serve`) every commit fsyncs the WAL, and
 * better-sqlite3 does it on the thread that serves requests: a profile of `GET /tokens/{id}` under
 * load spent much of that thread in the fsync of the audit batches (one every 50 ms,
 * docs/performance.md). Here such a transaction commits at synchronous=NORMAL (its WAL frames are
 * written, not fsynced; FULL is set back at once), and the answer resolves after an fdatasync of the
 * WAL file on Node's thread pool: when it resolves, the commit is on disk as FULL would have put it
 * there. Readers may see the rows a few milliseconds before they are on disk, so this is only for
 * writes nobody is answered about until they are durable (the audit batches: the audit log awaits
 * the flush). Where the connection is not at FULL, or not in WAL mode on a file (`:memory:`), the
 * transaction commits as it would anyway and the answer resolves at once.
 */
export class WalSync {
  readonly #db: BetterSqlite3Database;
  readonly #statements: StatementCache;
  #walPath: string | null | undefined;

  constructor(db: BetterSqlite3Database, statements: StatementCache) {
    this.#db = db;
    this.#statements = statements;
  }

  /** Runs `write` (one transaction, committed when it returns); resolves once its commit is durable. */
  commit(write: () => void): Promise<void> {
    const wal = this.#wal();
    if (wal === null || (this.#statements.get('PRAGMA synchronous').get() as { synchronous: number }).synchronous !== FULL) {
      write();
      return Promise.resolve();
    }
    this.#statements.get('PRAGMA synchronous = NORMAL').run();
    try {
      write();
    } finally {
      this.#statements.get('PRAGMA synchronous = FULL').run();
    }
    return syncFile(wal);
  }

  /** The WAL file's path; null when the database is not a file in WAL mode. Looked up once. */
  #wal(): string | null {
    if (this.#walPath === undefined) {
      const name = this.#db.name;
      const mode = this.#db.pragma('journal_mode', { simple: true });
      this.#walPath = mode === 'wal' && !this.#db.memory && name !== '' ? `${name}-wal` : null;
    }
    return this.#walPath;
  }
}

/**
 * fdatasync of a file through a descriptor of its own (any descriptor flushes the file's pages). A
 * WAL file that is gone was checkpointed into the database, which the checkpoint synced.
 */
async function syncFile(path: string): Promise<void> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return;
    throw error;
  }
  try {
    await handle.datasync();
  } finally {
    await handle.close();
  }
}
