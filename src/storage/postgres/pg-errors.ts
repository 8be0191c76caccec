import { ConflictError, ServiceUnavailableError, ValidationError } from '../../errors/errors.js';

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

/**
 * SQLSTATEs of a connection the server ended or refused: the backend was terminated
 * (pg_terminate_backend, a restart: 57P01/57P02), the server is starting or stopping (57P03), or a
 * connection exception (08xxx). What was not committed on that connection was rolled back.
 */
export const CONNECTION_SQLSTATES: Readonly<Record<string, string>> = Object.freeze({
  '57P01': 'admin_shutdown',
  '57P02': 'crash_shutdown',
  '57P03': 'cannot_connect_now',
  '08000': 'connection_exception',
  '08001': 'sqlclient_unable_to_establish_sqlconnection',
  '08003': 'connection_does_not_exist',
  '08004': 'sqlserver_rejected_establishment_of_sqlconnection',
  '08006': 'connection_failure',
});

/** Socket errors of a lost or refused connection (Node error codes). */
const CONNECTION_NODE_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** pg's own errors for a connection lost mid-use (they carry no code). */
const CONNECTION_MESSAGES = [/Connection terminated/i, /connection error and is not queryable/i, /timeout exceeded when trying to connect/i, /Client was closed/i];

/**
 * Whether the error means the connection was lost or could not be made (not that the statement was
 * wrong): running the work again on a fresh connection may succeed.
 */
export function isConnectionError(error: unknown): boolean {
  const code = sqlstate(error);
  if (code !== undefined && (Object.hasOwn(CONNECTION_SQLSTATES, code) || CONNECTION_NODE_CODES.has(code))) return true;
  const message = (error as { message?: unknown } | null)?.message;
  return code === undefined && typeof message === 'string' && CONNECTION_MESSAGES.some((pattern) => pattern.test(message));
}

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
 * Unstorable text is a ValidationError. A lost connection (after the executor's retry), or a
 * serialization failure that outlasted every retry, is an ServiceUnavailableError (503 with Retry-After).
 * Anything else is passed on unchanged: an internal error, rendered as a generic 500 over HTTP.
 */
export function translateError(error: unknown): unknown {
  if (isConnectionError(error)) return new ServiceUnavailableError('The database connection was lost; retry the request shortly', 1, error);
  if (isRetryable(error)) return new ServiceUnavailableError('The database kept refusing the transaction as conflicting; retry the request shortly', 1, error);
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
