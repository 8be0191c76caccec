/** Operations: access log, Prometheus metrics, and the per-request event both are built from. */
export { accessLog, pinoVaultLogger } from './access-log.js';
export { type ExchangeEvent, type ExchangeObserver, observeAll } from './exchange-event.js';
export { type VaultMetrics, createMetrics } from './metrics.js';
