import { ServiceUnavailableError } from '../../errors/errors.js';
import type { PublicRoute } from './route.js';

/** Routes that need no API key: liveness, readiness and the API description. */
export const systemRoutes: PublicRoute[] = [
  {
    method: 'GET',
    path: '/healthz',
    operationId: 'health',
    auth: false,
    status: 200,
    docs: { summary: 'Liveness: the handler is up', tag: 'System', responseSchema: 'Health' },
    handle: () => ({ status: 'ok' }),
  },
  {
    method: 'GET',
    path: '/readyz',
    operationId: 'ready',
    auth: false,
    status: 200,
    docs: { summary: 'Readiness: the store answers a query (503 when it does not)', tag: 'System', responseSchema: 'Health', extraStatuses: [503] },
    handle: async ({ vault }) => {
      try {
        await vault.ready();
      } catch {
        // The cause (a driver error) stays out of the response: it may name hosts or schemas.
        throw new ServiceUnavailableError('The store does not answer; the vault is not ready');
      }
      return { status: 'ok' };
    },
  },
  {
    method: 'GET',
    path: '/openapi.json',
    operationId: 'openapi',
    auth: false,
    status: 200,
    docs: { summary: 'This API as an OpenAPI 3.1 document', tag: 'System', responseSchema: 'OpenApiDocument' },
    handle: ({ openapi }) => openapi(),
  },
];
