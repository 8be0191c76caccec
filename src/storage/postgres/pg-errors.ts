import { ConflictError, ValidationError } from '../../errors.js';

/**
 * SQLSTATEs after which the whole transaction (or lone statement) was rolled back and running it
 * again is safe and may succeed. The store's own locking avoids them at READ COMMITTED, but a
 * database whose default_transaction_isolation is serializable or repeatable read raises 40001 on
 * any write conflict, and foreign-key cascades can deadlock under unusual interleavings.
 */
export const RETRYABLE_SQLSTATES: Readonly<Record<string, string>> = Object.freeze({
  '40001': 'serialization_failure',
  '40P01': 'deadlock_detected',
});

const UNIQUE_VIOLATION = '23505';
/**
 * Text PostgreSQL cannot store: a NUL character in a text value (22021), or a \u0000 escape in a
 * jsonb value (22P05). SQLite stores both, and the input validators let NUL through, so it is the
 * caller's input that is wrong here, not the database.
 */
const UNSTORABLE_TEXT = new Set(['22021', '22P05']);

function sqlstate(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isRetryable(error: unknown): boolean {
  const code = sqlstate(error);
  return code !== undefined && Object.hasOwn(RETRYABLE_SQLSTATES, code);
}

/**
 * Driver errors as the store reports them. The store's writes use ON CONFLICT where the interface
 * promises a result rather than an error, so a unique violation reaching here is a record that
 * already exists: ConflictError (without the driver's detail, which quotes the key values).
 * Unstorable text is a ValidationError. Anything else is passed on unchanged: an internal error, rendered as a generic 500 over HTTP.
 */
export function translateError(error: unknown): unknown {
  const code = sqlstate(error);
  if (code === UNIQUE_VIOLATION) return new ConflictError('A record with this id already exists');
  if (code !== undefined && UNSTORABLE_TEXT.has(code)) return ValidationError.field('input', 'must not contain NUL characters (\\u0000)');
  return error;
}

/**
 * The connection string with its password replaced by `***` (user, host, port and database stay:
 * they are what an operator needs to tell which server was meant).
 * @example redactConnectionString('postgres://app:s3cret@db:5432/vault') // 'postgres://app:***@db:5432/vault'
 */
export function redactConnectionString(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (url.password !== '') url.password = '***';
    for (const key of [...url.searchParams.keys()]) {
      if (key.toLowerCase().includes('password')) url.searchParams.set(key, '***');
    }
    return url.toString();
  } catch {
    // Not a URL: keep only what cannot be a secret.
    return '<connection string>';
  }
}
