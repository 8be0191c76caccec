/**
 * `tokenvault/metrics`: Prometheus metrics of the HTTP handler (prom-client), plus the access log and
 * the per-request event both are built from (also exported by `tokenvault/http`).
 */
export { accessLog, pinoVaultLogger } from './access-log.js';
export { type ExchangeEvent, type ExchangeObserver, observeAll } from './exchange-event.js';
export { type VaultMetrics, createMetrics } from './metrics.js';
