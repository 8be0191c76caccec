import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import { type Harness, VISA, harness } from './helpers.js';
import { bodyRequests } from './route-bodies.js';
import { describeEachStore } from '../support/stores.js';

/** Keys that name Object.prototype members: a map built from input that is not own-property-safe breaks on them. */
const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'];

describeEachStore('HTTP property', (store) => {
  let h: Harness;
  let reader: Caller;
  let admin: Caller;
  beforeAll(async () => {
    h = await harness({ maxBodyBytes: 4096 }, store);
    reader = await h.vault.caller({ permissions: ['token:read'], rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:read'] }] });
    admin = await h.vault.authenticate(h.adminKey);
    await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'card', data: VISA, id: 'known-token' } });
  });
  afterAll(async () => {
    await h.vault.close();
  });

  /** Everything a request could change, as the services show it (data revealed, every page). */
  async function snapshot(): Promise<string> {
    const parts: unknown[] = [];
    for (let page = 1; ; page++) {
      const tokens = await h.vault.tokens.list(reader, { page, size: 100 });
      parts.push(tokens.data);
      if (page >= (tokens.pagination as { total_pages: number }).total_pages) break;
    }
    parts.push((await h.vault.applications.list(admin, { page: 1, size: 100 })).data);
    parts.push((await h.vault.formulas.list(admin, { page: 1, size: 100 })).data);
    parts.push((await h.vault.reactors.list(admin, { page: 1, size: 100 })).data);
    return JSON.stringify(parts);
  }

  const SEGMENTS = [
    'tokens',
    'reactors',
    'reactor-formulas',
    'applications',
    'logs',
    'tokenize',
    'search',
    'react',
    'regenerate',
    'openapi.json',
    'healthz',
    'known-token',
    '',
    '..',
    '%',
    '%2F',
    '%E0%A4%A',
  ];
  const segment = fc.oneof(fc.constantFrom(...SEGMENTS), fc.string({ maxLength: 12 }).map(encodeURIComponent), fc.string({ maxLength: 6 }));
  const query = fc.array(
    fc.tuple(
      fc.oneof(
        fc.constantFrom(
          'id',
          'type',
          'metadata.customer',
          'metadata.',
          'page',
          'size',
          'start',
          'name',
          'resource_id',
          'operation',
          ...PROTOTYPE_KEYS,
          'metadata.__proto__',
          'metadata[constructor]',
        ),
        fc.string({ maxLength: 8 }),
      ),
      fc.string({ maxLength: 12 }),
    ),
    { maxLength: 4 },
  );
  const path = fc.tuple(fc.array(segment, { minLength: 1, maxLength: 4 }), query).map(([segments, pairs]) => {
    const search = new URLSearchParams(pairs).toString();
    return `/${segments.join('/')}${search ? `?${search}` : ''}`;
  });
  const method = fc.oneof(fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'), fc.stringMatching(/^[A-Z]{1,8}$/));
  const tokenBody = fc.record({ type: fc.oneof(fc.constantFrom('card', 'bank', 'token', 'card_number'), fc.string()), data: fc.jsonValue({ maxDepth: 3 }) }, { requiredKeys: [] });
  const body = fc.oneof(
    fc.json({ maxDepth: 4 }),
    fc.string({ maxLength: 50 }),
    fc.constantFrom('', '{', 'null', '[]', '{"query":"type:card"}', '{"__proto__":{"x":1}}', '{"args":{"a":"{{ known-token }}"}}'),
    tokenBody.map((b) => JSON.stringify(b)),
    fc.array(tokenBody, { maxLength: 3 }).map((b) => JSON.stringify(b)),
  );
  const contentType = fc.option(fc.constantFrom('application/json', 'application/merge-patch+json', 'text/plain', 'application/json; charset=latin1', 'application/x+json', ''), {
    nil: undefined,
  });
  const headerName = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/);
  const headers = fc.dictionary(headerName, fc.stringMatching(/^[\x21-\x7e]{0,20}$/), { maxKeys: 3 });
  const keyChoice = fc.constantFrom('user', 'admin', 'bogus', 'none');
  const idempotency = fc.option(
    fc.string({ minLength: 0, maxLength: 300 }).filter((s) => /^[\x21-\x7e]*$/.test(s)),
    { nil: undefined },
  );

  it('arbitrary requests: never a 5xx, never a throw, and a rejected request changes nothing', async () => {
    let before = await snapshot();
    await fc.assert(
      fc.asyncProperty(method, path, body, contentType, headers, keyChoice, idempotency, async (m, p, b, type, extra, who, idem) => {
        const init: RequestInit = { method: m, headers: new Headers(extra) };
        const hs = init.headers as Headers;
        if (who === 'user') hs.set('svc-api-key', h.userKey);
        if (who === 'admin') hs.set('svc-api-key', h.adminKey);
        if (who === 'bogus') hs.set('svc-api-key', 'tv_bogus_key_0000000000000000');
        if (type !== undefined) hs.set('content-type', type);
        if (idem !== undefined) hs.set('svc-idempotency-key', idem);
        if (m !== 'GET' && m !== 'HEAD') init.body = b;
        const response = await h.handler(new Request(`http://vault.test${p}`, init));
        const text = await response.text();
        expect(response.status, `${m} ${p} → ${text}`).toBeLessThan(500);
        if (response.status >= 400) {
          expect(response.headers.get('content-type')).toBe('application/problem+json');
          const problem = JSON.parse(text);
          expect(problem.status).toBe(response.status);
          expect(text).not.toContain(h.userKey);
          expect(text).not.toContain(h.adminKey);
          expect(text).not.toContain(VISA.number);
        }
        const after = await snapshot();
        if (response.status >= 400) expect(after, `${m} ${p} changed the store`).toBe(before);
        before = after;
      }),
      { numRuns: 300 },
    );
  });

  /** Every object of a JSON value (the value itself first), with arrays walked. */
  function objectsIn(value: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
    if (Array.isArray(value)) for (const item of value) objectsIn(item, out);
    else if (value !== null && typeof value === 'object') {
      out.push(value as Record<string, unknown>);
      for (const item of Object.values(value)) objectsIn(item, out);
    }
    return out;
  }

  /** Sets an own property, as JSON.parse makes it (assignment to `__proto__` would set the prototype). */
  const define = (target: Record<string, unknown>, key: string, value: unknown) =>
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  /** A fresh copy of a generated value (fast-check shares them; the body must stay a tree). */
  const copy = (value: unknown): unknown => (value === undefined ? null : JSON.parse(JSON.stringify(value)));

  const injection = fc.record({
    key: fc.constantFrom(...PROTOTYPE_KEYS),
    value: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant({ x: 1 }), fc.constant(null), fc.constant('{{ proto-known }}')),
    /** Which object of the body (the body itself, or one nested in it) gets the key. */
    at: fc.nat(),
    /** add: one more key; rename: an existing key of that object gets the name instead; wrap: one of its values becomes `{ key: value }`. */
    how: fc.constantFrom('add', 'rename', 'wrap'),
  });

  it("every route's body with prototype-named keys (top level and nested): never a 5xx, nothing polluted", async () => {
    const requests = await bodyRequests(h);
    const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort();
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.array(injection, { minLength: 1, maxLength: 3 }), async (which, injections) => {
        const request = requests[which % requests.length]!;
        const body = await request.body();
        for (const { key, value, at, how } of injections) {
          const objects = objectsIn(body);
          if (objects.length === 0) break;
          const target = objects[at % objects.length]!;
          const keys = Object.keys(target);
          const existing = keys[at % Math.max(keys.length, 1)];
          if (how === 'add' || existing === undefined) define(target, key, copy(value));
          else if (how === 'rename') {
            const kept = target[existing];
            delete target[existing];
            define(target, key, kept);
          } else define(target, existing, define({}, key, copy(value)));
        }
        const text = JSON.stringify(body);
        const sent = await h.call(request.method, request.path, { key: request.key, body: text });
        expect(sent.status, `${request.route} ${text} → ${sent.text}`).toBeLessThan(500);
        if (sent.status >= 400) {
          expect(sent.headers.get('content-type')).toBe('application/problem+json');
          expect(sent.body.status).toBe(sent.status);
        }
        expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeys);
        expect(({} as Record<string, unknown>)['x']).toBeUndefined();
      }),
      { numRuns: 250 },
    );
  });
});
