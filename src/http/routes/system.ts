import { KeyProviderUnavailableError, SealedError, ServiceUnavailableError } from '../../errors/errors.js';
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
    docs: {
      summary: 'Readiness: the store answers a query and the key provider serves (503 when not: sealed, HSM away)',
      tag: 'System',
      responseSchema: 'Health',
      extraStatuses: [503],
    },
    handle: async ({ vault }) => {
      try {
        await vault.ready();
      } catch (error) {
        // A sealed vault or an HSM away says so in our own words (docs/key-custody.md).
        if (error instanceof SealedError || error instanceof KeyProviderUnavailableError) throw error;
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
