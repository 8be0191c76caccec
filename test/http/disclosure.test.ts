import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import type { Logger } from '../../src/common/logger.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import { describeEachStore, type TestStore } from '../support/stores.js';
import { BASE, VISA, read, type Sent } from './helpers.js';

/*
 * The disclosure findings of the security issue, through the HTTP API as an attacker holding the
 * weakest key would try them (docs/security.md, "Security model"). Every test runs on SQLite and PostgreSQL.
 */

const REVEAL_ALL: AccessRule[] = [
  { priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search'] },
];

async function setup(store: TestStore) {
  const vault = await store.vault();
  const errors: string[] = [];
  const logger: Logger = { info() {}, warn() {}, error: (message) => errors.push(message) };
  const handler = createFetchHandler(vault, { logger });
  const key = async (permissions: Permission[], type: 'public' | 'private', rules: AccessRule[] = []) => (await vault.caller({ permissions, type, rules })).key;
  const call = async (method: string, path: string, apiKey: string, body?: unknown): Promise<Sent> => {
    const headers = new Headers({ 'SVC-API-KEY': apiKey });
    if (body !== undefined) headers.set('content-type', method === 'PATCH' ? 'application/merge-patch+json' : 'application/json');
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    return read(await handler(new Request(BASE + path, { method, headers, ...(payload === undefined ? {} : { body: payload }) })));
  };
  const owner = await key(['token:create', 'token:read', 'token:update', 'token:delete', 'token:search'], 'private', REVEAL_ALL);
  const browser = await key(['token:create', 'token:update'], 'public');
  return { vault, call, key, owner, browser, errors };
}

describeEachStore('HTTP disclosure', (store) => {
  it('a public key cannot PATCH a mask that shows the card (403), and reads nothing back', async () => {
    const { call, key, owner, browser } = await setup(store);
    const masker = await key(['token:read'], 'private');
    const card = (await call('POST', '/tokens', owner, { type: 'card', data: VISA })).body;
    const patched = await call('PATCH', `/tokens/${card.id}`, browser, { mask: { n: '{{ data.number }}', cvc: '{{ data.cvc }}' } });
    expect(patched.status).toBe(403);
    expect(patched.body.detail).toMatch(/'mask'/);
    expect(patched.text).not.toContain(VISA.number);
    const slice = await call('PATCH', `/tokens/${card.id}`, browser, { fingerprint_expression: '{{ data.number | slice: 0, 2 }}' });
    expect(slice.status).toBe(403);
    expect((await call('GET', `/tokens/${card.id}`, masker)).body.data.number).toBe('XXXXXXXXXXXX4242');
    // An allowed update answers without data or fingerprint for a key that cannot read.
    const updated = await call('PATCH', `/tokens/${card.id}`, browser, { metadata: { a: 'b' } });
    expect(updated.status).toBe(200);
    expect(updated.body).not.toHaveProperty('data');
    expect(updated.body).not.toHaveProperty('fingerprint');
  });

  it('a public key cannot end a token early through expires_at (403); the token lives on', async () => {
    const { vault, call, owner, browser } = await setup(store);
    const token = (await call('POST', '/tokens', owner, { type: 'token', data: 'x' })).body;
    const soon = new Date(vault.clock.now() + 2_000).toISOString();
    expect((await call('PATCH', `/tokens/${token.id}`, browser, { expires_at: soon })).status).toBe(403);
    vault.clock.advance(3_000);
    expect((await call('GET', `/tokens/${token.id}`, owner)).status).toBe(200);
  });

  it('list total_items counts only readable tokens; a create never deduplicates against a token the caller cannot reveal', async () => {
    const { call, key, owner, browser } = await setup(store);
    const reader = await key(['token:read'], 'private', [{ priority: 0, container: '/general/', transform: 'mask', permissions: ['token:read'] }]);
    const first = (await call('POST', '/tokens', owner, { type: 'card', data: VISA, deduplicate_token: true })).body;
    await call('POST', '/tokens', owner, { type: 'token', data: 'x' });
    const page = await call('GET', '/tokens?page=1&size=10', reader);
    expect(page.body.pagination).toMatchObject({ total_items: 1 });
    // The browser may not reveal the owner's card: no duplicate, a token of its own, no id of another.
    const again = await call('POST', '/tokens', browser, { type: 'card', data: VISA, deduplicate_token: true });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(first.id);
    expect(again.body).not.toHaveProperty('_extras');
  });

  it('POST /tokenize with 20,000-deep nesting is a 400 naming body, not a 500', async () => {
    const { call, owner, errors } = await setup(store);
    const deep = '{"a":'.repeat(20_000) + '{"type":"token","data":"x"}' + '}'.repeat(20_000);
    const sent = await call('POST', '/tokenize', owner, deep);
    expect(sent.status).toBe(400);
    expect(sent.body.errors).toHaveProperty('body');
    const array = '['.repeat(20_000) + ']'.repeat(20_000);
    expect((await call('POST', '/tokenize', owner, array)).status).toBe(400);
    expect(errors).toEqual([]);
    expect((await call('GET', '/tokens?page=1&size=10', owner)).body.pagination.total_items).toBe(0);
  });

  it('a search term metadata.__proto__:m is a term like any other (200), not a 500', async () => {
    const { call, owner, errors } = await setup(store);
    const token = (await call('POST', '/tokens', owner, '{"type":"token","data":"x","metadata":{"__proto__":"m"}}')).body;
    const sent = await call('POST', '/tokens/search', owner, { query: 'metadata.__proto__:m' });
    expect(sent.status).toBe(200);
    expect(sent.body.data.map((t: { id: string }) => t.id)).toEqual([token.id]);
    expect((await call('POST', '/tokens/search', owner, { query: 'metadata.__proto__:m AND metadata.__proto__:n' })).body.data).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('a list with 1,000 metadata filters is a 400 (at most 100), not a 500', async () => {
    const { call, owner, errors } = await setup(store);
    const query = Array.from({ length: 1000 }, (_, i) => `metadata.k${i}=v`).join('&');
    const sent = await call('GET', `/tokens?${query}`, owner);
    expect(sent.status).toBe(400);
    expect(sent.body.errors.metadata).toEqual(['must have at most 100 filters']);
    const terms = Array.from({ length: 1000 }, (_, i) => `metadata.k${i}:v`).join(' ');
    expect((await call('POST', '/tokens/search', owner, { query: terms })).status).toBe(400);
    expect(errors).toEqual([]);
  });

  it('a token the key holds no grant on answers 404 exactly as a missing id on every route that takes its id; a key with another grant gets 403', async () => {
    const { call, key, owner } = await setup(store);
    const use: Permission[] = ['token:read', 'token:update', 'token:delete', 'token:use'];
    const general = (permissions: Permission[]): AccessRule => ({ priority: 0, container: '/general/', transform: 'reveal', permissions });
    const stranger = await key(use, 'private', [general(use)]);
    const reader = await key(use, 'private', [general(use), { priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] }]);
    expect((await call('POST', '/tokens', owner, { type: 'social_security_number', data: '123-45-6789', id: 'cust-10042-ssn' })).status).toBe(201);
    const routes: [string, string, (id: string) => unknown][] = [
      ['GET', '/tokens/', () => undefined],
      ['PATCH', '/tokens/', () => ({ metadata: { k: 'v' } })],
      ['DELETE', '/tokens/', () => undefined],
      ['POST', '/detokenize', (id) => ({ ssn: `{{ ${id} }}` })],
    ];
    const send = (apiKey: string, [method, path, body]: (typeof routes)[number], id: string) => call(method, path.endsWith('/') ? path + id : path, apiKey, body(id));
    for (const route of routes) {
      const hidden = await send(stranger, route, 'cust-10042-ssn');
      const missing = await send(stranger, route, 'cust-10043-ssn');
      expect(hidden.status, route[0] + route[1]).toBe(route[1] === '/detokenize' ? 400 : 404);
      expect(hidden.text.replaceAll('10042', 'N'), route[0] + route[1]).toBe(missing.text.replaceAll('10043', 'N'));
      if (route[0] !== 'GET') expect((await send(reader, route, 'cust-10042-ssn')).status, route[0] + route[1]).toBe(403);
    }
    expect((await call('GET', '/tokens/cust-10042-ssn', owner)).body.metadata).toEqual({});
  });
});
