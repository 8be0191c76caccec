import { type ErrorCode, type FieldErrors, InternalError, ReactorError, UnavailableError, ValidationError, VaultError, statusOf } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ExchangeResponse } from './exchange.js';
import { reactorResponse } from './reactor-response.js';

/** The body of an error response (RFC 9457, `application/problem+json`). */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldErrors;
}

/** Codes the HTTP layer adds to the core's closed set: routing outcomes that no service raises. */
export type HttpProblemCode = ErrorCode | 'route_not_found' | 'method_not_allowed';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * The one mapping table: each code's problem type URI and title. The status comes from the core's
 * `STATUS_BY_CODE` (via `statusOf`), so there is a single source for it. Type URIs are URNs: stable
 * identifiers that do not pretend to be documentation pages.
 */
const PROBLEMS: Readonly<Record<HttpProblemCode, { type: string; title: string }>> = Object.freeze({
  validation_error: { type: 'urn:tokenvault:problem:validation-error', title: 'Bad Request' },
  authentication_error: { type: 'urn:tokenvault:problem:authentication-error', title: 'Unauthorized' },
  authorization_error: { type: 'urn:tokenvault:problem:authorization-error', title: 'Forbidden' },
  not_found: { type: 'urn:tokenvault:problem:not-found', title: 'Not Found' },
  route_not_found: { type: 'urn:tokenvault:problem:route-not-found', title: 'Not Found' },
  method_not_allowed: { type: 'urn:tokenvault:problem:method-not-allowed', title: 'Method Not Allowed' },
  conflict: { type: 'urn:tokenvault:problem:conflict', title: 'Conflict' },
  payload_too_large: { type: 'urn:tokenvault:problem:payload-too-large', title: 'Content Too Large' },
  unsupported_media_type: { type: 'urn:tokenvault:problem:unsupported-media-type', title: 'Unsupported Media Type' },
  unprocessable: { type: 'urn:tokenvault:problem:unprocessable', title: 'Unprocessable Content' },
  reactor_error: { type: 'urn:tokenvault:problem:reactor-error', title: 'Reactor Error' },
  unavailable: { type: 'urn:tokenvault:problem:unavailable', title: 'Service Unavailable' },
  internal_error: { type: 'urn:tokenvault:problem:internal-error', title: 'Internal Server Error' },
});

/** The fixed detail of every 500 that is not a reactor's: nothing about the cause leaks. */
export const INTERNAL_DETAIL = 'An unexpected error occurred; it has been logged.';

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
  if (!(error instanceof VaultError) || error.code === 'internal_error') {
    return { ...PROBLEMS.internal_error, status: 500, detail: INTERNAL_DETAIL };
  }
  const status = statusOf(error);
  const entry = PROBLEMS[error.code];
  // A reactor error names the sandbox class (BadRequestError, RateLimitError…) as its title.
  const title = error instanceof ReactorError ? error.kind : entry.title;
  const problem: ProblemDetails = { type: entry.type, title, status, detail: error.message };
  if (error instanceof ValidationError && Object.keys(error.errors).length > 0) problem.errors = error.errors;
  return problem;
}

/**
 * The error response for any thrown value. A reactor's CustomHttpResponseError is the reactor's own
 * response (its status, allow-listed headers and JSON body: see reactor-response.ts); everything
 * else is a problem document. Unknown errors are logged by name only: their message or stack might
 * quote data. `reservedHeaderPrefix` (the handler's header prefix) names headers no reactor may set.
 */
export function errorResponse(error: unknown, logger: Logger, extraHeaders?: Record<string, string>, reservedHeaderPrefix?: string): ExchangeResponse {
  if (error instanceof ReactorError && error.kind === 'CustomHttpResponseError') {
    const custom = reactorResponse(error, reservedHeaderPrefix ?? null);
    if (custom) return custom;
  }
  if (error instanceof InternalError) logger.error('request failed with an internal error', { error: error.message });
  else if (!(error instanceof VaultError) && !(error instanceof RouteError)) {
    logger.error('request failed with an unexpected error', { error: error instanceof Error ? error.name : typeof error });
  }
  const problem = problemOf(error);
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE, ...extraHeaders };
  if (error instanceof RouteError && error.allow.length > 0) headers['allow'] = error.allow.join(', ');
  if (error instanceof UnavailableError) headers['retry-after'] = String(error.retryAfterSeconds);
  return { status: problem.status, headers, body: JSON.stringify(problem) };
}
