import { ConflictError, ServiceUnavailableError, ValidationError } from '../../errors/errors.js';

/**
 * What a SQLite error code means at the store boundary (better-sqlite3 reports extended codes such
 * as `SQLITE_BUSY_SNAPSHOT`; a code is looked up whole, then by its primary part `SQLITE_BUSY`).
 * - transient: another connection holds the lock (the busy timeout already waited for it), or a
 *   WAL snapshot went stale. The transaction was rolled back, so the operation is run once more;
 *   a second failure is a 503 with Retry-After.
 * - unavailable: the database cannot be written now (disk full, I/O error, read-only file): 503.
 * - conflict: a unique key exists. The store's writes use ON CONFLICT where the interface promises
 *   a result, so one reaching here is a record that already exists: 409 (without the driver's
 *   text, which quotes key values).
 * - too_big: a value over SQLite's length limit: 400.
 * Anything else passes unchanged: an internal error, a generic 500 over HTTP.
 */
export const SQLITE_ERRORS: Readonly<Record<string, 'transient' | 'unavailable' | 'conflict' | 'too_big'>> = Object.freeze({
  SQLITE_BUSY: 'transient',
  SQLITE_LOCKED: 'transient',
  SQLITE_FULL: 'unavailable',
  SQLITE_IOERR: 'unavailable',
  SQLITE_READONLY: 'unavailable',
  SQLITE_CANTOPEN: 'unavailable',
  SQLITE_PROTOCOL: 'unavailable',
  SQLITE_CONSTRAINT_UNIQUE: 'conflict',
  SQLITE_CONSTRAINT_PRIMARYKEY: 'conflict',
  SQLITE_TOOBIG: 'too_big',
});

function kindOf(error: unknown): (typeof SQLITE_ERRORS)[string] | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return undefined;
  if (Object.hasOwn(SQLITE_ERRORS, code)) return SQLITE_ERRORS[code];
  const primary = code.split('_', 2).join('_');
  return Object.hasOwn(SQLITE_ERRORS, primary) ? SQLITE_ERRORS[primary] : undefined;
}

/** Whether running the operation again may succeed (its transaction was rolled back). */
export function isTransientSqliteError(error: unknown): boolean {
  return kindOf(error) === 'transient';
}

/** The store's error for a driver error (see SQLITE_ERRORS); other errors unchanged. */
export function translateSqliteError(error: unknown): unknown {
  switch (kindOf(error)) {
    case 'transient':
      return new ServiceUnavailableError('The database is locked by another writer; retry the request shortly', 1, error);
    case 'unavailable':
      return new ServiceUnavailableError('The database cannot be written now; retry the request shortly', 1, error);
    case 'conflict':
      return new ConflictError('A record with this id already exists');
    case 'too_big':
      return ValidationError.field('input', 'is too large to store');
    default:
      return error;
  }
}
