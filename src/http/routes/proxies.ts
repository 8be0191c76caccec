// Bodies are typed as a valid one is; the service validates them.
import type { CreateProxyRequest, PatchProxyRequest, UpdateProxyRequest } from '../../proxy/proxies-input.js';
import { reactorListQuery } from '../query.js';
import { type AuthenticatedRoute, PAGING } from './route.js';

/** Pre-configured proxies (docs/proxies.md). Each route is one ProxiesService call. */
export const proxyRoutes: AuthenticatedRoute[] = [
  {
    method: 'POST',
    path: '/proxies',
    operationId: 'createProxy',
    auth: true,
    permission: 'proxy:create',
    status: 201,
    body: 'json',
    docs: { summary: 'Create a pre-configured proxy (its key is in this answer only)', tag: 'Proxies', requestSchema: 'CreateProxyRequest', responseSchema: 'Proxy' },
    handle: ({ vault, caller, body }) => vault.proxies.create(caller, body as CreateProxyRequest),
  },
  {
    method: 'GET',
    path: '/proxies',
    operationId: 'listProxies',
    auth: true,
    permission: 'proxy:read',
    status: 200,
    docs: {
      summary: 'List pre-configured proxies',
      tag: 'Proxies',
      responseSchema: 'ProxyList',
      query: [{ name: 'name', description: 'Case-insensitive wildcard search on the name (`*` matches any run of characters).' }, ...PAGING],
    },
    handle: ({ vault, caller, query }) => {
      const { id: _ids, ...rest } = reactorListQuery(query);
      return vault.proxies.list(caller, rest);
    },
  },
  {
    method: 'GET',
    path: '/proxies/{id}',
    operationId: 'getProxy',
    auth: true,
    permission: 'proxy:read',
    status: 200,
    docs: { summary: 'Get a pre-configured proxy (never its key or configuration values)', tag: 'Proxies', responseSchema: 'Proxy' },
    handle: ({ vault, caller, params }) => vault.proxies.get(caller, params['id']!),
  },
  {
    method: 'PUT',
    path: '/proxies/{id}',
    operationId: 'updateProxy',
    auth: true,
    permission: 'proxy:update',
    status: 200,
    body: 'json',
    docs: { summary: 'Replace a pre-configured proxy', tag: 'Proxies', requestSchema: 'UpdateProxyRequest', responseSchema: 'Proxy' },
    handle: ({ vault, caller, params, body }) => vault.proxies.update(caller, params['id']!, body as UpdateProxyRequest),
  },
  {
    method: 'PATCH',
    path: '/proxies/{id}',
    operationId: 'patchProxy',
    auth: true,
    permission: 'proxy:update',
    status: 200,
    body: 'merge-patch',
    docs: { summary: 'Change what a JSON merge patch names of a pre-configured proxy', tag: 'Proxies', requestSchema: 'PatchProxyRequest', responseSchema: 'Proxy' },
    handle: ({ vault, caller, params, body }) => vault.proxies.patch(caller, params['id']!, body as PatchProxyRequest),
  },
  {
    method: 'DELETE',
    path: '/proxies/{id}',
    operationId: 'deleteProxy',
    auth: true,
    permission: 'proxy:delete',
    status: 204,
    docs: { summary: 'Delete a pre-configured proxy', tag: 'Proxies' },
    handle: ({ vault, caller, params }) => vault.proxies.delete(caller, params['id']!),
  },
  {
    method: 'POST',
    path: '/proxies/{id}/key',
    operationId: 'rotateProxyKey',
    auth: true,
    permission: 'proxy:update',
    status: 200,
    docs: { summary: 'Give a proxy a new key (the old one stops working; the new one is in this answer only)', tag: 'Proxies', responseSchema: 'Proxy' },
    handle: ({ vault, caller, params }) => vault.proxies.rotateKey(caller, params['id']!),
  },
  {
    method: 'POST',
    path: '/proxies/{id}/confirm',
    operationId: 'confirmProxy',
    auth: true,
    permission: 'proxy:update',
    status: 200,
    docs: { summary: "Confirm a proxy whose key ended with its maker's credentials: it stands on their current generation again", tag: 'Proxies', responseSchema: 'Proxy' },
    handle: ({ vault, caller, params }) => vault.proxies.confirm(caller, params['id']!),
  },
];
