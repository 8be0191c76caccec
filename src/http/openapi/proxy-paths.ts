/**
 * The OpenAPI description of `/proxy` and `/proxy/{path}` (docs/proxies.md). They are not JSON
 * routes (proxy-handler.ts passes bodies and answers through), so they are described here by hand.
 */
import type { OperationOptions } from './operations.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'] as const;

/** The two proxy paths with every method the proxy forwards. */
export function proxyPaths(options: OperationOptions): Record<string, Record<string, unknown>> {
  const prefix = options.headerPrefix;
  const proxyError = {
    description: 'The vault refused or failed (not the destination)',
    content: { 'application/json': { schema: { type: 'object', required: ['proxy_error'], properties: { proxy_error: { $ref: '#/components/schemas/Problem' } } } } },
  };
  const operation = (method: string, sub: boolean) => ({
    operationId: `proxy${method[0]!.toUpperCase()}${method.slice(1)}${sub ? 'Path' : ''}`,
    tags: ['Proxy'],
    summary: `Proxy (${method.toUpperCase()}): sends the request to ${prefix}-PROXY-URL${sub ? ' + /{path}' : ''} with the {{ token_id }} expressions of its body and header values detokenized (proxy:invoke; token:use per token), or calls the pre-configured proxy of ${prefix}-PROXY-KEY (its transforms run; without an API key only when it has require_auth false)`,
    parameters: [
      {
        name: `${prefix}-PROXY-URL`,
        in: 'header',
        required: false,
        description: 'The destination base URL (https, a public DNS name, an allowed port); required unless a proxy key is sent.',
        schema: { type: 'string' },
      },
      {
        name: `${prefix}-PROXY-KEY`,
        in: 'header',
        required: false,
        description: "A pre-configured proxy's key: its destination and transforms are used.",
        schema: { type: 'string' },
      },
      {
        name: `${prefix}-proxy-key`,
        in: 'query',
        required: false,
        description: `The proxy key as a query parameter (taken out before forwarding), for callers that cannot set ${prefix}-PROXY-KEY.`,
        schema: { type: 'string' },
      },
      ...(sub ? [{ name: 'path', in: 'path', required: true, description: 'Appended to the base URL path.', schema: { type: 'string' } }] : []),
    ],
    ...(method === 'get' || method === 'head'
      ? {}
      : {
          requestBody: {
            required: false,
            content: { '*/*': { schema: {} } },
            description: `Forwarded; at most ${options.maxBodyBytes} bytes, also once decompressed when the vault reads a body sent with Content-Encoding gzip, deflate or br (it is then forwarded uncompressed; another encoding, or more than 3 stacked, is a 415).`,
          },
        }),
    responses: {
      default: {
        description: `The destination answer as it is, with ${prefix}-PROXY-DESTINATION-STATUS`,
        headers: { [`${prefix}-PROXY-DESTINATION-STATUS`]: { schema: { type: 'integer' } } },
      },
      ...Object.fromEntries([400, 401, 403, 413, 415, 429, 502, 504].map((status) => [String(status), proxyError])),
    },
  });
  return {
    '/proxy': Object.fromEntries(METHODS.map((m) => [m, operation(m, false)])),
    '/proxy/{path}': Object.fromEntries(METHODS.map((m) => [m, operation(m, true)])),
  };
}
