import type { Logger as PinoLogger } from 'pino';
import type { ExchangeObserver } from './exchange-event.js';

/**
 * An access log: one pino line per request with its method, route template, status, duration and
 * application id. The route is the template (`/tokens/{id}`), so token ids, query values, bodies
 * and keys never reach the log.
 */
export function accessLog(logger: PinoLogger): ExchangeObserver {
  return (event) => {
    logger.info(
      {
        method: event.method,
        route: event.route ?? '(no route)',
        status: event.status,
        duration_ms: Math.round(event.durationMs * 1000) / 1000,
        application_id: event.applicationId,
      },
      'request',
    );
  };
}

/** The vault's Logger interface on a pino logger, so the vault's entries and the access log share one stream. */
export { pinoVaultLogger } from '../common/logger.js';
