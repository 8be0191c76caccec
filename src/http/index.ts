/**
 * `tokenvault/http`: the vault's HTTP API as a web-standard fetch handler.
 * @example
 * import { createFetchHandler } from 'tokenvault/http';
 * export default { fetch: createFetchHandler(vault) };
 */
export { createFetchHandler } from './fetch-handler.js';
export type { FetchHandler, FetchHandlerOptions } from './fetch-handler.js';
export { PROBLEM_CONTENT_TYPE, problemOf } from './problem.js';
export type { RequestInfo, TrustForwardedFor } from './client-address.js';
export type { ProblemDetails } from './problem.js';
export { IDEMPOTENCY_TTL_MS } from '../idempotency/idempotency-service.js';
/** The HTTP status of each error code, and of a given error (a reactor error carries its own). */
export { STATUS_BY_CODE, statusOf } from '../errors/errors.js';
// Metrics (prom-client) are in `tokenvault/metrics`, so importing the handler does not load them.
export { accessLog, pinoVaultLogger } from '../observability/access-log.js';
export { observeAll } from '../observability/exchange-event.js';
export type { ExchangeEvent, ExchangeObserver } from '../observability/exchange-event.js';
