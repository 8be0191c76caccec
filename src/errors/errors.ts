/**
 * The closed set of errors tokenvault raises. Each has a stable `code`; the HTTP layer maps codes to
 * statuses in one table (`src/http/problem.ts`). Anything that is not a VaultError is an internal
 * error and is rendered as a generic 500 with nothing leaked.
 *
 * Messages never contain token data, keys or secrets.
 */
export type FieldErrors = Record<string, string[]>;

export type ErrorCode =
  | 'validation_error'
  | 'authentication_error'
  | 'authorization_error'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'unprocessable'
  | 'service_unavailable'
  | 'sealed'
  | 'bad_gateway'
  | 'gateway_timeout'
  | 'too_many_requests'
  | 'reactor_error'
  | 'internal_error';

export abstract class VaultError extends Error {
  abstract readonly code: ErrorCode;
}

/** 400: the input was wrong. `errors` maps a field path (`data.number`) to its messages. */
export class ValidationError extends VaultError {
  readonly code = 'validation_error' as const;
  readonly errors: FieldErrors;
  constructor(errors: FieldErrors | string, detail?: string) {
    const map = typeof errors === 'string' ? { [errors]: [detail ?? 'is invalid'] } : errors;
    super(detail ?? summarize(map));
    this.name = 'ValidationError';
    this.errors = map;
  }
  /** Builds one from a single field and message. */
  static field(field: string, message: string): ValidationError {
    // `this`, not the class name: a class that names itself is emitted as `_ValidationError`.
    return new this({ [field]: [message] });
  }
}

function summarize(errors: FieldErrors): string {
  const parts = Object.entries(errors).map(([f, msgs]) => `${f}: ${msgs.join('; ')}`);
  return parts.length ? `Validation failed: ${parts.join(', ')}` : 'Validation failed';
}

/** 401: missing or unknown API key. */
export class AuthenticationError extends VaultError {
  readonly code = 'authentication_error' as const;
  constructor(message = 'A valid API key is required') {
    super(message);
    this.name = 'AuthenticationError';
  }
}

/** 403: the caller lacks a permission, or a container grant. */
export class AuthorizationError extends VaultError {
  readonly code = 'authorization_error' as const;
  constructor(message = 'The application lacks the permission for this operation') {
    super(message);
    this.name = 'AuthorizationError';
  }
}

/** 404: missing, expired, or belonging to another tenant (never distinguished). */
export class NotFoundError extends VaultError {
  readonly code = 'not_found' as const;
  /** The id that was looked up, when there was one. */
  readonly id: string | undefined;
  constructor(what = 'Resource', id?: string) {
    super(id === undefined ? `${what} not found` : `${what} '${id}' not found`);
    this.name = 'NotFoundError';
    this.id = id;
  }
}

/** 409: id conflict, or an idempotency key whose first request is still in flight. */
export class ConflictError extends VaultError {
  readonly code = 'conflict' as const;
  constructor(message: string) {
    super(message);
    this.name = 'ConflictError';
  }
}

/** The conflict of an update whose precondition failed: the record changed since it was read. */
export function concurrentChange(what: string, id: string): ConflictError {
  return new ConflictError(`${what} '${id}' was changed by another request meanwhile; read it again and retry`);
}

/** The conflict of an insert the store answered `'exists'`: the id (random, or the caller's) is taken. */
export function requireCreated(result: 'created' | 'exists', what: string, id: string): void {
  if (result === 'exists') throw new ConflictError(`${what} '${id}' already exists`);
}

/** 413: a request body over the configured limit. */
export class PayloadTooLargeError extends VaultError {
  readonly code = 'payload_too_large' as const;
  constructor(limitBytes: number, message?: string) {
    super(message ?? `Request body exceeds the limit of ${limitBytes} bytes: send a smaller body`);
    this.name = 'PayloadTooLargeError';
  }
}

/** 415: wrong Content-Type (PATCH without merge-patch, POST/PUT without JSON). */
export class UnsupportedMediaTypeError extends VaultError {
  readonly code = 'unsupported_media_type' as const;
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedMediaTypeError';
  }
}

/** 422: a request that is well-formed but cannot be processed (idempotency key reused with another body). */
export class UnprocessableError extends VaultError {
  readonly code = 'unprocessable' as const;
  constructor(message: string) {
    super(message);
    this.name = 'UnprocessableError';
  }
}

/**
 * An error raised by reactor code (or by the sandbox on its behalf), carrying the HTTP status of the
 * reactor error class (ARCHITECTURE.md, Reference facts). `kind` is the class name seen in the sandbox.
 * For CustomHttpResponseError, `body` and `headers` are the reactor's own response.
 */
export class ReactorError extends VaultError {
  readonly code = 'reactor_error' as const;
  readonly kind: string;
  readonly status: number;
  readonly body: unknown;
  readonly headers: Record<string, string> | undefined;
  constructor(kind: string, status: number, message: string, extra?: { body?: unknown; headers?: Record<string, string> }) {
    super(message);
    this.name = 'ReactorError';
    this.kind = kind;
    this.status = status;
    this.body = extra?.body;
    this.headers = extra?.headers;
  }
}

/**
 * 503: the database cannot answer now (locked by another writer past the busy timeout, the
 * connection lost twice, the disk full). Nothing was committed, or the outcome is unknown and the
 * request is safe to retry with its Idempotency-Key. `retryAfterSeconds` becomes `Retry-After`.
 */
export class ServiceUnavailableError extends VaultError {
  readonly code = 'service_unavailable' as const;
  readonly retryAfterSeconds: number;
  /** `cause`: the driver's error, for logs and the CLI; never rendered over HTTP. */
  constructor(message = 'The database is unavailable; retry the request shortly', retryAfterSeconds = 1, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'ServiceUnavailableError';
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * 503: the key provider cannot wrap or unwrap now (an HSM that does not answer, a PKCS#11 session
 * the module closed, a token removed). Nothing was written: no key is made or used without it.
 * The vault retries the provider by itself (docs/key-custody.md).
 */
export class KeyProviderUnavailableError extends ServiceUnavailableError {
  constructor(message = 'The key provider (HSM) does not answer; retry the request shortly', retryAfterSeconds = 5, cause?: unknown) {
    super(message, retryAfterSeconds, cause);
    this.name = 'KeyProviderUnavailableError';
  }
}

/**
 * 503 `sealed`: the master key is split into shares (split knowledge) and the threshold of them has
 * not been given since the start or the last seal (docs/key-custody.md). Its own code, so a client
 * or a monitor tells "waiting for its key custodians" from "the database is down".
 */
export class SealedError extends VaultError {
  readonly code = 'sealed' as const;
  readonly retryAfterSeconds: number;
  constructor(message = 'The vault is sealed: its master key custodians have not unsealed it yet (tokenvault unseal)', retryAfterSeconds = 30) {
    super(message);
    this.name = 'SealedError';
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * 500: a fault of the vault's own state (for example a stored row whose key is missing), never of
 * the input. Rendered like any internal error: a generic message, the detail goes to the log only.
 */
export class InternalError extends VaultError {
  readonly code = 'internal_error' as const;
  constructor(message: string) {
    super(message);
    this.name = 'InternalError';
  }
}

/**
 * 502: a proxied request's destination could not be reached, broke off, or answered more than the
 * limit (docs/proxies.md). The message names the destination host only, never the request.
 */
export class BadGatewayError extends VaultError {
  readonly code = 'bad_gateway' as const;
  constructor(message: string) {
    super(message);
    this.name = 'BadGatewayError';
  }
}

/** 504: a proxied request's destination did not answer within the time limit. */
export class GatewayTimeoutError extends VaultError {
  readonly code = 'gateway_timeout' as const;
  constructor(message: string) {
    super(message);
    this.name = 'GatewayTimeoutError';
  }
}

/**
 * 429: an unauthenticated call of an inbound proxy over its rate limit (docs/proxies.md, Inbound).
 * `retryAfterSeconds` becomes `Retry-After`.
 */
export class TooManyRequestsError extends VaultError {
  readonly code = 'too_many_requests' as const;
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.name = 'TooManyRequestsError';
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Maps each error code to its HTTP status. ReactorError carries its own status. */
export const STATUS_BY_CODE: Readonly<Record<ErrorCode, number>> = Object.freeze({
  validation_error: 400,
  authentication_error: 401,
  authorization_error: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  service_unavailable: 503,
  sealed: 503,
  bad_gateway: 502,
  gateway_timeout: 504,
  too_many_requests: 429,
  reactor_error: 500,
  internal_error: 500,
});

export function statusOf(error: unknown): number {
  if (error instanceof ReactorError) return error.status;
  if (error instanceof VaultError) return STATUS_BY_CODE[error.code];
  return 500;
}
