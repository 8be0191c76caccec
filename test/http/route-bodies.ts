import { ROUTES } from '../../src/http/routes/index.js';
import type { Harness } from './helpers.js';

/** A request to a route that takes a body, with a valid body for it (what the fuzzers start from). */
export interface BodyRequest {
  /** `METHOD /path/{pattern}`, for messages. */
  route: string;
  method: string;
  path: string;
  key: string;
  /** A fresh valid body (a new object each time; for authorizeSession, with a nonce made for it). */
  body: () => Promise<unknown>;
}

const CODE = 'module.exports = async (req) => ({ raw: { args: req.args, configuration: req.configuration } })';
const FORMULA = {
  name: 'f',
  type: 'private',
  code: CODE,
  configuration: [{ name: 'k', type: 'string' }],
  request_parameters: [
    { name: 'a', type: 'number', optional: true },
    { name: 'n.b', type: 'string', optional: true },
  ],
};
const RULES = [{ priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] }];

/**
 * One valid request for every route of ROUTES that takes a body, on resources made here (a token
 * `proto-known`, a formula, a reactor, an application, a webhook), so that a body reaches the
 * service's validation and beyond. Throws when a route with a body has no entry: a new route must
 * be added here to be fuzzed.
 */
export async function bodyRequests(h: Harness): Promise<BodyRequest[]> {
  const ok = async (method: string, path: string, key: string, body?: unknown) => {
    const sent = await h.call(method, path, { key, ...(body === undefined ? {} : { body }) });
    if (sent.status >= 300) throw new Error(`${method} ${path}: ${sent.status} ${sent.text}`);
    return sent.body;
  };
  await ok('POST', '/tokens', h.userKey, { type: 'token', data: { a: 'x' }, id: 'proto-known' });
  const formula = await ok('POST', '/reactor-formulas', h.adminKey, FORMULA);
  const reactor = await ok('POST', '/reactors', h.userKey, { name: 'r', formula: { id: formula.id }, configuration: { k: 'v' } });
  const app = await ok('POST', '/applications', h.adminKey, { name: 'a', type: 'private', permissions: ['token:read'], rules: RULES });
  const webhook = await ok('POST', '/webhooks', h.adminKey, { name: 'h', url: 'https://example.com/hook', events: ['token.created'] });
  const proxy = await ok('POST', '/proxies', h.adminKey, { name: 'p', destination_url: 'https://example.com/api' });
  const publicKey = await h.key(['token:create'], 'public');
  const intentKey = await h.key(['token-intent:create'], 'public');
  const nonce = async () => (await ok('POST', '/sessions', publicKey)).nonce as string;

  const bodies: Record<string, { path: string; key: string; body: () => unknown }> = {
    createToken: { path: '/tokens', key: h.userKey, body: () => ({ type: 'token', data: { a: 'x', n: { b: 1 } }, metadata: { k: 'v' }, search_indexes: ['{{ data.a }}'] }) },
    createTokenIntent: {
      path: '/token-intents',
      key: intentKey,
      body: () => ({ type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 } }),
    },
    updateToken: { path: '/tokens/proto-known', key: h.userKey, body: () => ({ data: { a: 'y' }, metadata: { k: 'w' } }) },
    searchTokens: { path: '/tokens/search', key: h.userKey, body: () => ({ query: 'type:token', size: 5 }) },
    searchTokensV2: { path: '/v2/tokens/search', key: h.userKey, body: () => ({ query: 'type:token', size: 5 }) },
    tokenize: { path: '/tokenize', key: h.userKey, body: () => ({ a: { type: 'token', data: 'x', metadata: { k: 'v' } }, list: [{ type: 'token', data: { b: 1 } }] }) },
    detokenize: { path: '/detokenize', key: h.userKey, body: () => ({ a: '{{ proto-known }}', n: { b: 'x {{ proto-known | json: "$.a" }}' } }) },
    createReactor: { path: '/reactors', key: h.userKey, body: () => ({ name: 'r', formula: { id: formula.id }, configuration: { k: 'v' } }) },
    updateReactor: { path: `/reactors/${reactor.id}`, key: h.userKey, body: () => ({ name: 'r', configuration: { k: 'w' } }) },
    patchReactor: { path: `/reactors/${reactor.id}`, key: h.userKey, body: () => ({ name: 'r2', configuration: { k: 'x' } }) },
    invokeReactor: { path: `/reactors/${reactor.id}/react`, key: h.userKey, body: () => ({ args: { a: 1, n: { b: "{{ proto-known | json: '$.a' }}" } } }) },
    invokeReactorAsync: {
      path: `/reactors/${reactor.id}/react-async`,
      key: h.userKey,
      body: () => ({ args: { a: 1, n: { b: 'x' } }, callback_url: 'https://example.com/callback' }),
    },
    createReactorFormula: { path: '/reactor-formulas', key: h.adminKey, body: () => FORMULA },
    updateReactorFormula: { path: `/reactor-formulas/${formula.id}`, key: h.adminKey, body: () => ({ ...FORMULA, name: 'f2' }) },
    createApplication: { path: '/applications', key: h.adminKey, body: () => ({ name: 'a', type: 'private', permissions: ['token:read'], rules: RULES }) },
    updateApplication: { path: `/applications/${app.id}`, key: h.adminKey, body: () => ({ name: 'a2', permissions: ['token:read'], rules: RULES }) },
    regenerateApplicationKey: { path: `/applications/${app.id}/regenerate`, key: h.adminKey, body: () => ({}) },
    authorizeSession: {
      path: '/sessions/authorize',
      key: h.userKey,
      // A nonce is used once: each body gets a fresh one.
      body: async () => ({ nonce: await nonce(), rules: [{ priority: 0, container: '/general/', transform: 'mask', permissions: ['token:read'] }] }),
    },
    createProxy: { path: '/proxies', key: h.adminKey, body: () => ({ name: 'p', destination_url: 'https://example.com/api', configuration: { k: 'v' }, require_auth: true }) },
    updateProxy: { path: `/proxies/${proxy.id}`, key: h.adminKey, body: () => ({ name: 'p2', destination_url: 'https://example.com/api' }) },
    patchProxy: { path: `/proxies/${proxy.id}`, key: h.adminKey, body: () => ({ name: 'p3', configuration: { k: 'w' } }) },
    createWebhook: { path: '/webhooks', key: h.adminKey, body: () => ({ name: 'h', url: 'https://example.com/hook', events: ['token.created'] }) },
    updateWebhook: { path: `/webhooks/${webhook.id}`, key: h.adminKey, body: () => ({ name: 'h2', url: 'https://example.com/hook', events: ['token.created', 'token.updated'] }) },
    retryWebhookDelivery: { path: '/webhook-deliveries/no-such-delivery/retry', key: h.adminKey, body: () => ({}) },
    rotateWebhookSecret: { path: '/webhook-secret/rotate', key: h.adminKey, body: () => ({}) },
  };
  const out: BodyRequest[] = [];
  for (const route of ROUTES) {
    if (!('body' in route) || route.body === undefined) continue;
    const entry = bodies[route.operationId];
    if (entry === undefined) throw new Error(`no valid body for ${route.operationId} (${route.method} ${route.path}): add one to test/http/route-bodies.ts`);
    out.push({ route: `${route.method} ${route.path}`, method: route.method, path: entry.path, key: entry.key, body: async () => structuredClone(await entry.body()) });
  }
  return out;
}
