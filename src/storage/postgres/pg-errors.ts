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
  // The server ended a session left idle in a transaction past idle_in_transaction_session_timeout.
  '25P03': 'idle_in_transaction_session_timeout',
  '08000': 'connection_exception',
  '08001': 'sqlclient_unable_to_establish_sqlconnection',
  '08003': 'connection_does_not_exist',
  '08004': 'sqlserver_rejected_establishment_of_sqlconnection',
  '08006': 'connection_failure',
});

/** Socket errors of a lost or refused connection (Node error codes). */
const CONNECTION_NODE_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** pg's own errors for a connection lost mid-use (they carry no code). */
const CONNECTION_MESSAGES = [/Connection terminated/i, /connection error and is not queryable/i, /Client was closed/i];

/**
 * A wait cut short by a bound (docs/storage.md, "Timeouts"): the database, or the store, gave up
 * waiting; nothing says the request or the connection is wrong. `statement_timeout` and
 * `lock_timeout` are the bounds the store sets (57014 "due to statement timeout", 55P03);
 * `query_canceled` is a 57014 for another reason (an administrator's pg_cancel_backend, a cancel
 * request); `connect_timeout` is a connection not had within connectTimeoutMs (opening one, or
 * waiting for a free one of the pool); `answer_timeout` is the store's client-side backstop.
 */
export type DatabaseWait = 'statement_timeout' | 'query_canceled' | 'lock_timeout' | 'connect_timeout' | 'answer_timeout';

const QUERY_CANCELED = '57014';
const LOCK_NOT_AVAILABLE = '55P03';
/** pg-pool's messages when connectionTimeoutMillis passed (no code): no free connection, or none opened. */
const CONNECT_TIMEOUT_MESSAGES = [/timeout exceeded when trying to connect/i, /Connection terminated due to connection timeout/i];
/** pg's message when a query's query_timeout passed. */
const ANSWER_TIMEOUT_MESSAGE = /^Query read timeout$/;

/** Which wait the error ended, if it is one (never run again by the executor: see pg-executor.ts). */
export function databaseWait(error: unknown): DatabaseWait | undefined {
  const code = sqlstate(error);
  if (code === QUERY_CANCELED) return /statement timeout/i.test(messageOf(error)) ? 'statement_timeout' : 'query_canceled';
  if (code === LOCK_NOT_AVAILABLE) return 'lock_timeout';
  if (code !== undefined) return undefined;
  const message = messageOf(error);
  if (CONNECT_TIMEOUT_MESSAGES.some((pattern) => pattern.test(message))) return 'connect_timeout';
  return ANSWER_TIMEOUT_MESSAGE.test(message) ? 'answer_timeout' : undefined;
}

function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : '';
}

/** What the caller is told of each wait, in our words (the driver's message stays in `cause`). */
const WAIT_MESSAGES: Readonly<Record<DatabaseWait, string>> = Object.freeze({
  statement_timeout: 'The database did not finish the statement within the statement timeout; retry the request shortly',
  query_canceled: 'The database cancelled the statement; retry the request shortly',
  lock_timeout: 'A database lock was not granted within the lock timeout (another transaction holds it); retry the request shortly',
  connect_timeout: 'No database connection was free or could be opened within the connect timeout; retry the request shortly',
  answer_timeout: 'The database did not answer in time; retry the request shortly',
});

/**
 * Whether the error means the connection was lost or could not be made (not that the statement was
 * wrong): running the work again on a fresh connection may succeed. A connect timeout is a wait
 * (databaseWait), not a loss: running it again would only wait as long again on a pool that is
 * full or a server that does not answer.
 */
export function isConnectionError(error: unknown): boolean {
  if (databaseWait(error) !== undefined) return false;
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
 * serialization failure that outlasted every retry, is an ServiceUnavailableError (503 with Retry-After),
 * and so is a wait cut short (databaseWait: a statement or lock timeout, a cancelled statement, no
 * connection in time), its message naming which.
 * Anything else is passed on unchanged: an internal error, rendered as a generic 500 over HTTP.
 */
export function translateError(error: unknown): unknown {
  const wait = databaseWait(error);
  if (wait !== undefined) return new ServiceUnavailableError(WAIT_MESSAGES[wait], 1, error);
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
