import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Caller } from '../../src/caller.js';
import { type Harness, VISA, harness } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

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

  const SEGMENTS = ['tokens', 'reactors', 'reactor-formulas', 'applications', 'logs', 'tokenize', 'search', 'react', 'regenerate', 'openapi.json', 'healthz', 'known-token', '', '..', '%', '%2F', '%E0%A4%A'];
  const segment = fc.oneof(fc.constantFrom(...SEGMENTS), fc.string({ maxLength: 12 }).map(encodeURIComponent), fc.string({ maxLength: 6 }));
  const query = fc.array(
    fc.tuple(fc.oneof(fc.constantFrom('id', 'type', 'metadata.customer', 'metadata.', 'page', 'size', 'start', 'name', 'resource_id', 'operation'), fc.string({ maxLength: 8 })), fc.string({ maxLength: 12 })),
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
  const contentType = fc.option(fc.constantFrom('application/json', 'application/merge-patch+json', 'text/plain', 'application/json; charset=latin1', 'application/x+json', ''), { nil: undefined });
  const headerName = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/);
  const headers = fc.dictionary(headerName, fc.stringMatching(/^[\x21-\x7e]{0,20}$/), { maxKeys: 3 });
  const keyChoice = fc.constantFrom('user', 'admin', 'bogus', 'none');
  const idempotency = fc.option(fc.string({ minLength: 0, maxLength: 300 }).filter((s) => /^[\x21-\x7e]*$/.test(s)), { nil: undefined });

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
});
