import type { Database as BetterSqlite3Database } from 'better-sqlite3';
import type { Store } from '../store.js';
import { isTransientSqliteError, translateSqliteError } from './sqlite-errors.js';
import { bindPart, type AreaMethod, type StoreArea, type StorePart } from '../store-parts.js';

/** The SQLite store as callers see it: the Store contract, plus the connection for backups. */
export type SqliteStore = Store & {
  /** The underlying connection, for backups (`database.backup(...)`) and diagnostics. Do not write to the store's tables. */
  readonly database: BetterSqlite3Database;
};

/** One area's methods as the SQLite core has them: each answers what the Store's answers, or a Promise of it (group commit). */
export type SqlitePart<A extends StoreArea> = {
  [K in AreaMethod<A>]: (...args: Parameters<Store[K]>) => Awaited<ReturnType<Store[K]>> | ReturnType<Store[K]>;
};

/**
 * The boundary between the synchronous core and callers: each of the area's methods answers a
 * Promise, and leaves driver errors translated by one table (sqlite-errors.ts): a transient one
 * (SQLITE_BUSY after the busy timeout, a stale snapshot) runs the operation once more, since its
 * transaction was rolled back; what still fails is a 503. The core stays synchronous so its
 * transactions compose; the extra cost is one resolved promise per call (measured in `npm run bench`:
 * in-process get and create beside the raw driver).
 */
export function boundaryPart<A extends StoreArea>(area: A, part: SqlitePart<A>): StorePart<A> {
  // boundaryMethod turns each method's answer R into Promise<Awaited<R>>: what StorePart<A> states.
  return bindPart(area, part, boundaryMethod as unknown as (target: object, method: (...args: never[]) => unknown) => (...args: never[]) => unknown) as unknown as StorePart<A>;
}

/** One method of the core behind the boundary (see boundaryPart). */
export function boundaryMethod(target: object, method: (...args: unknown[]) => unknown): (...args: unknown[]) => Promise<unknown> {
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
