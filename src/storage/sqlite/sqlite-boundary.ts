import type { Database as BetterSqlite3Database } from 'better-sqlite3';
import type { Store } from '../store.js';
import { isTransientSqliteError, translateSqliteError } from './sqlite-errors.js';
import type { SqliteStoreCore } from './sqlite-store.js';

/** The SQLite store as callers see it: the Store contract, plus the connection for backups. */
export type SqliteStore = Store & {
  /** The underlying connection, for backups (`database.backup(...)`) and diagnostics. Do not write to the store's tables. */
  readonly database: BetterSqlite3Database;
};

/** `T`'s methods as the Store contract has them: each answers a Promise of what it answered. */
type Promised<T> = { [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : T[K] };

/** The parts of the core whose methods are store methods, beside the core's own. */
const PARTS = ['applications', 'reactors', 'proxies', 'idempotency', 'webhooks', 'tokenIntents'] as const;
type Parts = Omit<SqliteStoreCore, (typeof PARTS)[number] | 'database'> &
  SqliteStoreCore['applications'] &
  SqliteStoreCore['reactors'] &
  SqliteStoreCore['proxies'] &
  SqliteStoreCore['idempotency'] &
  SqliteStoreCore['webhooks'] &
  SqliteStoreCore['tokenIntents'];

/**
 * The boundary between the synchronous core and callers: every method of the core (and of its
 * parts) answers a Promise, and leaves driver errors translated by one table
 * (sqlite-errors.ts): a transient one (SQLITE_BUSY after the busy timeout, a stale snapshot) runs
 * the operation once more, since its transaction was rolled back; what still fails is a 503.
 * The core stays synchronous so its transactions compose; the extra cost is one resolved promise
 * per call (measured in `npm run bench`: in-process get and create beside the raw driver).
 */
export function sqliteBoundary(core: SqliteStoreCore): SqliteStore {
  const store = { get database() { return core.database; } } as Record<string, unknown>;
  for (const part of [core, ...PARTS.map((name) => core[name])] as object[]) {
    for (const name of methodNames(part)) store[name] = boundaryMethod(part, (part as Record<string, (...args: unknown[]) => unknown>)[name]!);
  }
  // The compiler checks here that the core, promised, is a whole Store.
  const checked: Promised<Parts> & Pick<SqliteStore, 'database'> = store as Promised<Parts> & Pick<SqliteStore, 'database'>;
  const asStore: SqliteStore = checked;
  return asStore;
}

function methodNames(part: object): string[] {
  const proto = Object.getPrototypeOf(part) as object;
  return Object.getOwnPropertyNames(proto).filter((name) => name !== 'constructor' && typeof Object.getOwnPropertyDescriptor(proto, name)?.value === 'function');
}

function boundaryMethod(target: object, method: (...args: unknown[]) => unknown): (...args: unknown[]) => Promise<unknown> {
  const retried = (args: unknown[]): Promise<unknown> => {
    try {
      return Promise.resolve(method.apply(target, args)).catch((error: unknown) => Promise.reject(translateSqliteError(error)));
    } catch (error) {
      return Promise.reject(translateSqliteError(error));
    }
  };
  return (...args: unknown[]): Promise<unknown> => {
    let result: unknown;
    try {
      result = method.apply(target, args);
    } catch (error) {
      return isTransientSqliteError(error) ? retried(args) : Promise.reject(translateSqliteError(error));
    }
    // Group-committed writes answer a promise of their own.
    if (result instanceof Promise) {
      return result.catch((error: unknown) => (isTransientSqliteError(error) ? retried(args) : Promise.reject(translateSqliteError(error))));
    }
    return Promise.resolve(result);
  };
}
