import { InternalError, ReactorError, SealedError, ServiceUnavailableError, TooManyRequestsError, VaultError } from '../errors/errors.js';
import { PROBLEMS, type ProblemDetails, problemOfError } from '../errors/problem.js';
export type { HttpProblemCode, ProblemDetails } from '../errors/problem.js';
export { INTERNAL_DETAIL } from '../errors/problem.js';
import { type Logger, unexpectedErrorFields } from '../common/logger.js';
import type { ExchangeResponse } from './exchange.js';
import { reactorResponse } from './reactor-response.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** A routing outcome (404 unknown route, 405 wrong method) raised by the handler itself. */
export class RouteError extends Error {
  readonly problemCode: 'route_not_found' | 'method_not_allowed';
  readonly allow: readonly string[];
  constructor(problemCode: 'route_not_found' | 'method_not_allowed', allow: readonly string[] = []) {
    super(problemCode === 'route_not_found' ? 'No such route' : `The method is not allowed on this path; allowed: ${allow.join(', ')}`);
    this.name = 'RouteError';
    this.problemCode = problemCode;
    this.allow = allow;
  }
}

const STATUS_OF_ROUTE: Readonly<Record<RouteError['problemCode'], number>> = { route_not_found: 404, method_not_allowed: 405 };

/** Builds the problem body for any thrown value (a non-VaultError becomes the generic 500). */
export function problemOf(error: unknown): ProblemDetails {
  if (error instanceof RouteError) {
    return { ...PROBLEMS[error.problemCode], status: STATUS_OF_ROUTE[error.problemCode], detail: error.message };
  }
  return problemOfError(error);
}

/**
 * The error response for any thrown value. A reactor's CustomHttpResponseError is the reactor's own
 * response (its status, allow-listed headers and JSON body: see reactor-response.ts); everything
 * else is a problem document. Unknown errors are logged with their name, message and stack frames
 * (unexpectedErrorFields: quoted input in a JSON parse error is cut out). `reservedHeaderPrefix` (the handler's header prefix) names headers no reactor may set.
 */
export function errorResponse(error: unknown, logger: Logger, extraHeaders?: Record<string, string>, reservedHeaderPrefix?: string): ExchangeResponse {
  if (error instanceof ReactorError && error.kind === 'CustomHttpResponseError') {
    const custom = reactorResponse(error, reservedHeaderPrefix ?? null);
    if (custom) return custom;
  }
  if (error instanceof InternalError) logger.error('request failed with an internal error', { error: error.message, ...stackOf(error) });
  else if (!(error instanceof VaultError) && !(error instanceof RouteError)) {
    logger.error('request failed with an unexpected error', unexpectedErrorFields(error));
  } else if (error instanceof ServiceUnavailableError) {
    // A condition of the database or the host (a lock or statement timeout, a lost connection, a
    // full disk), not a bug: one warning line, no stack (docs/logging.md).
    logger.warn('request answered 503: service unavailable', unavailableFields(error));
  }
  const problem = problemOf(error);
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE, ...extraHeaders };
  if (error instanceof RouteError && error.allow.length > 0) headers['allow'] = error.allow.join(', ');
  if (error instanceof ServiceUnavailableError || error instanceof TooManyRequestsError || error instanceof SealedError) headers['retry-after'] = String(error.retryAfterSeconds);
  return { status: problem.status, headers, body: JSON.stringify(problem) };
}

/** Our message (it names the condition) and the driver's code (a SQLSTATE or a socket error), never its message. */
function unavailableFields(error: ServiceUnavailableError): Record<string, string> {
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  return { error: error.code, detail: error.message, ...(typeof code === 'string' && /^[A-Z0-9_]{1,32}$/.test(code) ? { cause: code } : {}) };
}

function stackOf(error: Error): { stack?: string } {
  const { stack } = unexpectedErrorFields(error);
  return stack === undefined ? {} : { stack };
}
