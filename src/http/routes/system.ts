import type { PublicRoute } from './route.js';

/** Routes that need no API key: liveness and the API description. */
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
    path: '/openapi.json',
    operationId: 'openapi',
    auth: false,
    status: 200,
    docs: { summary: 'This API as an OpenAPI 3.1 document', tag: 'System', responseSchema: 'OpenApiDocument' },
    handle: ({ openapi }) => openapi(),
  },
];
