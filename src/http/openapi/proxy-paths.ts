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
    summary: `Ephemeral proxy (${method.toUpperCase()}): sends the request to ${prefix}-PROXY-URL${sub ? ' + /{path}' : ''} with the {{ token_id }} expressions of its body and header values detokenized (proxy:invoke; token:use per token)`,
    parameters: [
      { name: `${prefix}-PROXY-URL`, in: 'header', required: true, description: 'The destination base URL (https, a public DNS name, an allowed port).', schema: { type: 'string' } },
      ...(sub ? [{ name: 'path', in: 'path', required: true, description: 'Appended to the base URL path.', schema: { type: 'string' } }] : []),
    ],
    ...(method === 'get' || method === 'head' ? {} : { requestBody: { required: false, content: { '*/*': { schema: {} } }, description: `Forwarded; at most ${options.maxBodyBytes} bytes.` } }),
    responses: {
      default: { description: `The destination answer as it is, with ${prefix}-PROXY-DESTINATION-STATUS`, headers: { [`${prefix}-PROXY-DESTINATION-STATUS`]: { schema: { type: 'integer' } } } },
      ...Object.fromEntries([400, 401, 403, 413, 502, 504].map((status) => [String(status), proxyError])),
    },
  });
  return {
    '/proxy': Object.fromEntries(METHODS.map((m) => [m, operation(m, false)])),
    '/proxy/{path}': Object.fromEntries(METHODS.map((m) => [m, operation(m, true)])),
  };
}
