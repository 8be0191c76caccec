import { closeSync, openSync } from 'node:fs';
import * as v from 'valibot';
import { ValidationError } from '../../errors/errors.js';
import { validationFromIssues } from '../../validation/issues.js';

/** The slice of a better-sqlite3 statement the store calls (ARCHITECTURE.md, Rules of the house: depend on interfaces, by shape). */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** Rows as arrays of column values instead of objects. */
  raw(toggle?: boolean): SqliteStatement;
  /** Whether the statement answers rows (a SELECT, or a write with RETURNING). */
  readonly reader: boolean;
}

// Spelled like better-sqlite3's own typings so that its Database is assignable to the shape.
type AnyFunction = (...params: any[]) => unknown;
type ArgumentsOf<F extends AnyFunction> = F extends (...args: infer A) => unknown ? A : never;

/** A better-sqlite3 transaction function and its BEGIN IMMEDIATE / DEFERRED variants. */
export interface SqliteTransaction<F extends AnyFunction> {
  (...args: ArgumentsOf<F>): ReturnType<F>;
  immediate(...args: ArgumentsOf<F>): ReturnType<F>;
  deferred(...args: ArgumentsOf<F>): ReturnType<F>;
}

/**
 * The slice of a better-sqlite3 `Database` the store calls. Any better-sqlite3 (v9+) instance fits;
 * declaring the shape keeps the store's types independent of the driver's.
 */
export interface BetterSqlite3Database {
  readonly open: boolean;
  readonly memory: boolean;
  /** The file name the database was opened with. */
  readonly name: string;
  /** True while a transaction is open on the connection. */
  readonly inTransaction: boolean;
  prepare(source: string): SqliteStatement;
  transaction<F extends AnyFunction>(fn: F): SqliteTransaction<F>;
  exec(source: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  close(): unknown;
}

/**
 * Options of `createSqliteStore`. Give `filename` (default `':memory:'`) or an open `database`, not
 * both.
 */
export interface SqliteStoreOptions {
  /** Database file to open (created if missing). Default `':memory:'`: a private in-memory database. */
  filename?: string;
  /**
   * An open better-sqlite3 database to use instead of opening `filename`. The store does not close
   * it, and leaves its journal mode alone; it turns `foreign_keys` on and applies `synchronous` and
   * `busyTimeoutMs` only when they are given.
   */
  database?: BetterSqlite3Database;
  /**
   * Durability of a committed write (the SQLite `synchronous` pragma), default `'full'`.
   * - `'full'`: every commit is fsynced, so an acknowledged write survives a power loss or OS crash.
   * - `'normal'`: in WAL mode the WAL is fsynced only at checkpoints, so a commit waits for no
   *   fsync and commits are several times faster (docs/performance.md, SQLite store options); a
   *   killed process loses nothing, but a power loss or OS crash may lose the transactions
   *   acknowledged since the last checkpoint; the database stays consistent.
   */
  synchronous?: 'full' | 'normal';
  /** How long a writer waits for another connection's lock before SQLITE_BUSY. Default 5000 ms. */
  busyTimeoutMs?: number;
  /**
   * SQLite's page cache for a database the store opens, in MiB (default 64; better-sqlite3's own
   * default is 16). A larger cache keeps more of the token indexes of a large vault in memory, so
   * fewer lookups read pages back through the OS.
   */
  cacheSizeMiB?: number;
  /**
   * Hold the database file exclusively while the store is open (SQLite `locking_mode=EXCLUSIVE`,
   * set before WAL is opened so the WAL index lives in process memory). Default false. Every read
   * then skips the two file-lock system calls of a shared WAL reader, a visible share of a token
   * read's CPU (docs/performance.md, SQLite store options); but no other process can open the file
   * until the store closes (it gets "database is locked"): not even `sqlite3` for a backup (use
   * `store.database.backup()`).
   * `tokenvault serve` sets it unless given `--shared-db`. Ignored for `:memory:` and a `database`
   * passed in.
   */
  exclusive?: boolean;
}

/** Options after validation: frozen, defaults applied. */
export interface ResolvedSqliteStoreOptions {
  readonly filename: string;
  readonly database: BetterSqlite3Database | undefined;
  readonly synchronous: 'full' | 'normal' | undefined;
  readonly busyTimeoutMs: number | undefined;
  readonly cacheSizeMiB: number | undefined;
  readonly exclusive: boolean;
}

export const DEFAULT_BUSY_TIMEOUT_MS = 5000;
export const DEFAULT_CACHE_SIZE_MIB = 64;

function isDatabase(value: unknown): value is BetterSqlite3Database {
  if (typeof value !== 'object' || value === null) return false;
  const db = value as Record<string, unknown>;
  return ['prepare', 'transaction', 'exec', 'pragma', 'close'].every((name) => typeof db[name] === 'function');
}

const OptionsSchema = v.pipe(
  v.strictObject(
    {
      filename: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
      database: v.optional(v.custom<BetterSqlite3Database>(isDatabase, 'must be an open better-sqlite3 Database')),
      synchronous: v.optional(v.picklist(['full', 'normal'], "must be 'full' or 'normal'")),
      busyTimeoutMs: v.optional(v.pipe(v.number('must be a number'), v.integer('must be a whole number of milliseconds'), v.minValue(0, 'must not be negative'))),
      cacheSizeMiB: v.optional(
        v.pipe(v.number('must be a number'), v.integer('must be a whole number of MiB'), v.minValue(1, 'must be at least 1'), v.maxValue(65_536, 'must be at most 65536')),
      ),
      exclusive: v.optional(v.boolean('must be true or false')),
    },
    'must be an object',
  ),
  v.forward(
    v.partialCheck([['filename'], ['database']], (input) => input.filename === undefined || input.database === undefined, 'give either filename or database, not both'),
    ['database'],
  ),
);

/** Validates the options once, at construction; throws ValidationError keyed by option name. */
export function resolveSqliteStoreOptions(options: SqliteStoreOptions | undefined): ResolvedSqliteStoreOptions {
  const result = v.safeParse(OptionsSchema, options ?? {});
  // Keyed by option name; an issue with the options as a whole under 'options'.
  if (!result.success) throw validationFromIssues(result.issues, '', 'options');
  const { filename, database, synchronous, busyTimeoutMs, cacheSizeMiB, exclusive } = result.output;
  if (database !== undefined && !database.open) throw ValidationError.field('database', 'must be an open better-sqlite3 Database');
  return Object.freeze({
    filename: filename ?? ':memory:',
    database,
    // For a database we open, the defaults apply; a caller's database keeps its own settings.
    synchronous: synchronous ?? (database === undefined ? 'full' : undefined),
    busyTimeoutMs: busyTimeoutMs ?? (database === undefined ? DEFAULT_BUSY_TIMEOUT_MS : undefined),
    cacheSizeMiB: cacheSizeMiB ?? (database === undefined ? DEFAULT_CACHE_SIZE_MIB : undefined),
    exclusive: exclusive ?? false,
  });
}

/**
 * Creates the database file with mode 0600 (owner only) when it does not exist yet, before SQLite
 * opens it: SQLite would create it with 0644 (under the usual umask), readable by every local user,
 * and it gives the -wal and -shm files it creates later the mode of the database file, so all three
 * end up 0600 without touching the process umask. An existing file keeps the mode its owner chose.
 * In-memory and temporary databases (`:memory:`, empty name) and `file:` URIs are left to SQLite.
 */
export function createDatabaseFile(filename: string): void {
  if (filename === '' || filename === ':memory:' || filename.startsWith('file:')) return;
  try {
    closeSync(openSync(filename, 'wx', 0o600));
  } catch {
    // EEXIST: the file is there already. Anything else (a missing directory, no permission):
    // better-sqlite3 fails to open it next, with its own message.
  }
}
