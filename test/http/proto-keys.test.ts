/**
 * Keys named after Object.prototype members (`__proto__`, `constructor`, `toString`, ...) in a body
 * or a query are keys like any other: an unknown attribute is a 400 naming it, data keeps them as
 * data, never a 500 (first found by the HTTP property test, which fuzzes
 * them at every depth of every route's body).
 */
import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { describeEachStore } from '../support/stores.js';
import { harness } from './helpers.js';
import { bodyRequests } from './route-bodies.js';

const KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'];

/** Routes whose body's top level is data (any JSON), or which ignore their optional body. */
const FREE_FORM = new Set(['POST /tokenize', 'POST /detokenize', 'POST /applications/{id}/regenerate', 'POST /webhook-deliveries/{id}/retry', 'POST /webhook-secret/rotate']);

describeEachStore('prototype-named keys in a request', (store) => {
  it('POST /tokens with {"__proto__": …} is a 400 naming it, and creates nothing', async () => {
    const vault = await store.vault();
    const user = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const handler = createFetchHandler(vault);
    const response = await handler(
      new Request('http://vault.test/tokens', { method: 'POST', headers: { 'content-type': 'application/json', 'SVC-API-KEY': user.key }, body: '{"__proto__":{"x":1}}' }),
    );
    expect(response.status).toBe(400);
    const problem = (await response.json()) as { errors: Record<string, string[]> };
    expect(Object.hasOwn(problem.errors, '__proto__')).toBe(true);
    expect(problem.errors['__proto__']![0]).toMatch(/is not a recognized attribute/);
    expect((await vault.tokens.list(user)).data).toEqual([]);
  });

  it('every route with a closed body answers such a key at its top level with a 400 naming it; the others take it as data', async () => {
    const h = await harness({}, store);
    for (const request of await bodyRequests(h)) {
      for (const key of KEYS) {
        const body = (await request.body()) as Record<string, unknown>;
        Object.defineProperty(body, key, { value: { x: 1 }, enumerable: true });
        const sent = await h.call(request.method, request.path, { key: request.key, body: JSON.stringify(body) });
        const what = `${request.route} with '${key}' → ${sent.text}`;
        if (FREE_FORM.has(request.route)) expect(sent.status, what).toBeLessThan(500);
        else {
          expect(sent.status, what).toBe(400);
          expect(Object.keys(sent.body.errors), what).toEqual([key]);
        }
      }
    }
    expect(h.errors).toEqual([]);
  });

  it('a token body at the top of POST /tokenize with such a key is a 400 naming it, and creates nothing', async () => {
    const h = await harness({}, store);
    for (const key of KEYS) {
      const sent = await h.call('POST', '/tokenize', { key: h.userKey, body: `{"type":"token","data":"x",${JSON.stringify(key)}:{"a":1}}` });
      expect(sent.status, sent.text).toBe(400);
      expect(Object.keys(sent.body.errors)).toEqual([key]);
    }
    expect((await h.call('GET', '/tokens', { key: h.userKey })).body.data).toEqual([]);
  });

  it('a query parameter with such a name is a 400 naming it; a metadata filter with such a key is a filter', async () => {
    const h = await harness({}, store);
    const token = (await h.call('POST', '/tokens', { key: h.userKey, body: '{"type":"token","data":"x","metadata":{"__proto__":"p","constructor":"c"}}' })).body;
    for (const key of KEYS) {
      for (const path of ['/tokens', '/reactors', '/webhook-deliveries']) {
        const sent = await h.call('GET', `${path}?${key}=1`, { key: path === '/webhook-deliveries' ? h.adminKey : h.userKey });
        expect(sent.status, `${path}?${key}=1 → ${sent.text}`).toBe(400);
        expect(Object.keys(sent.body.errors)).toEqual([key]);
      }
    }
    const ids = async (query: string) => (await h.call('GET', `/tokens?${query}`, { key: h.userKey })).body.data.map((t: { id: string }) => t.id);
    expect(await ids('metadata.__proto__=p')).toEqual([token.id]);
    expect(await ids('metadata[constructor]=c')).toEqual([token.id]);
    expect(await ids('metadata.toString=c')).toEqual([]);
    expect(h.errors).toEqual([]);
  });
});
