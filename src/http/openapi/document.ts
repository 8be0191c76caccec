import { proxyPaths } from './proxy-paths.js';
import type { RouteDefinition } from '../routes/route.js';
import { type OperationOptions, operationOf } from './operations.js';
import { requestSchemas } from './request-schemas.js';
import { RESPONSE_SCHEMAS } from './response-schemas.js';
import type { Schema } from './schema-helpers.js';

/** The document's component schemas: request bodies generated from valibot, responses written by hand. */
export function componentSchemas(): Record<string, Schema> {
  const generated = requestSchemas();
  for (const name of Object.keys(RESPONSE_SCHEMAS)) {
    if (Object.hasOwn(generated, name)) throw new Error(`OpenAPI schema ${name} is both generated and hand-written`);
  }
  return { ...generated, ...RESPONSE_SCHEMAS };
}

/**
 * Builds the OpenAPI 3.1 document of a route table: every route with its parameters, request body,
 * success and error responses, and the API key security scheme named after the header prefix.
 */
export function buildOpenApiDocument(routes: readonly RouteDefinition[], options: OperationOptions): Record<string, unknown> {
  const apiKeyHeader = `${options.headerPrefix}-API-KEY`;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) (paths[route.path] ??= {})[route.method.toLowerCase()] = operationOf(route, options);
  Object.assign(paths, proxyPaths(options));
  const tags = [...new Set([...routes.map((r) => r.docs.tag), 'Proxy'])].map((name) => ({ name, description: `${name} operations.` }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'tokenvault',
      version: '0.1.0',
      description: [
        'Tokenization vault and reactor platform. Errors are RFC 9457 problem documents (application/problem+json).',
        'A path that names no route answers 404, and a method the path does not support 405 with an Allow header listing those it does (both problem documents).',
        'A query parameter the operation does not declare, or a body attribute its schema does not declare, is refused with a 400 naming it.',
      ].join(' '),
      license: { name: 'MIT', url: 'https://opensource.org/license/mit' },
    },
    servers: [{ url: '/', description: 'The server that serves this document.' }],
    tags,
    paths,
    components: {
      schemas: componentSchemas(),
      securitySchemes: { [apiKeyHeader]: { type: 'apiKey', in: 'header', name: apiKeyHeader } },
    },
    security: [{ [apiKeyHeader]: [] }],
  };
}
