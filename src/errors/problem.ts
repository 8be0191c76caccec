import { type ErrorCode, type FieldErrors, ReactorError, ValidationError, VaultError, statusOf } from './errors.js';

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

/**
 * The one mapping table: each code's problem type URI and title. The status comes from the core's
 * `STATUS_BY_CODE` (via `statusOf`), so there is a single source for it. Type URIs are URNs: stable
 * identifiers that do not pretend to be documentation pages.
 */
export const PROBLEMS: Readonly<Record<HttpProblemCode, { type: string; title: string }>> = Object.freeze({
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
  service_unavailable: { type: 'urn:tokenvault:problem:service-unavailable', title: 'Service Unavailable' },
  sealed: { type: 'urn:tokenvault:problem:sealed', title: 'Sealed' },
  bad_gateway: { type: 'urn:tokenvault:problem:bad-gateway', title: 'Bad Gateway' },
  gateway_timeout: { type: 'urn:tokenvault:problem:gateway-timeout', title: 'Gateway Timeout' },
  too_many_requests: { type: 'urn:tokenvault:problem:too-many-requests', title: 'Too Many Requests' },
  reactor_error: { type: 'urn:tokenvault:problem:reactor-error', title: 'Reactor Error' },
  internal_error: { type: 'urn:tokenvault:problem:internal-error', title: 'Internal Server Error' },
});

/** The fixed detail of every 500 that is not a reactor's: nothing about the cause leaks. */
export const INTERNAL_DETAIL = 'An unexpected error occurred; it has been logged.';

/**
 * The problem body (RFC 9457) of any thrown value: a VaultError's code, status and message, anything
 * else the generic 500 with nothing leaked. The HTTP layer renders errors with it, and asynchronous
 * reactor runs store a failed run's error in this shape.
 */
export function problemOfError(error: unknown): ProblemDetails {
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
