import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { BASE, VISA, expectProblem, read } from './helpers.js';

const SHOP = 'http://127.0.0.1:4000';
const EVIL = 'https://evil.example';

/** A JSON caller that may send the page origin an Elements frame sends. */
function caller(vault: TestVault) {
  const handler = createFetchHandler(vault);
  return async (method: string, path: string, key: string, body?: unknown, pageOrigin?: string, origin?: string) => {
    const headers = new Headers({ 'SVC-API-KEY': key });
    if (pageOrigin !== undefined) headers.set('SVC-PAGE-ORIGIN', pageOrigin);
    if (origin !== undefined) headers.set('Origin', origin);
    if (body !== undefined) headers.set('content-type', 'application/json');
    return read(await handler(new Request(BASE + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })));
  };
}

describeEachStore("Elements: a public application's allowed page origins (docs/elements.md)", (store) => {
  async function setup() {
    const vault = await store.vault();
    const call = caller(vault);
    const created = await call('POST', '/applications', vault.adminKey, {
      name: 'checkout',
      type: 'public',
      permissions: ['token:create'],
      allowed_origins: ['HTTP://127.0.0.1:4000', 'https://shop.example:443'],
    });
    expect(created.status).toBe(201);
    return { vault, call, app: created.body as { id: string; key: string; allowed_origins: string[] } };
  }

  async function tokenCount(s: Awaited<ReturnType<typeof setup>>) {
    const reader = await s.vault.caller({ permissions: ['token:read'] });
    return (await s.call('GET', '/tokens?size=100', reader.key)).body.data.length as number;
  }

  it('are stored normalized, shown on public applications only, kept by a rename, and refused when not origins (nothing changes)', async () => {
    const s = await setup();
    expect(s.app.allowed_origins).toEqual([SHOP, 'https://shop.example']);
    expect((await s.call('GET', `/applications/${s.app.id}`, s.vault.adminKey)).body.allowed_origins).toEqual([SHOP, 'https://shop.example']);
    const renamed = await s.call('PUT', `/applications/${s.app.id}`, s.vault.adminKey, { name: 'checkout 2' });
    expect(renamed.body.allowed_origins).toEqual([SHOP, 'https://shop.example']);
    for (const bad of [
      'https://shop.example/',
      'https://shop.example/pay',
      'https://*.shop.example',
      'null',
      'ftp://shop.example',
      'https://u:p@shop.example',
      'shop.example',
      'x'.repeat(300),
    ]) {
      const refused = expectProblem(await s.call('PUT', `/applications/${s.app.id}`, s.vault.adminKey, { name: 'c', allowed_origins: [bad] }), 400);
      expect(refused.errors['allowed_origins[0]'][0]).toMatch(/must be an origin|at most/);
    }
    expectProblem(await s.call('PUT', `/applications/${s.app.id}`, s.vault.adminKey, { name: 'c', allowed_origins: 'https://shop.example' }), 400);
    const onPrivate = expectProblem(await s.call('POST', '/applications', s.vault.adminKey, { name: 'p', type: 'private', allowed_origins: [SHOP] }), 400);
    expect(onPrivate.errors['allowed_origins'][0]).toMatch(/only be set on a public application/);
    const now = (await s.call('GET', `/applications/${s.app.id}`, s.vault.adminKey)).body;
    expect([now.name, now.allowed_origins]).toEqual(['checkout 2', [SHOP, 'https://shop.example']]);
    expect('allowed_origins' in (await s.call('GET', '/applications?size=100', s.vault.adminKey)).body.data.find((a: { type: string }) => a.type === 'management')).toBe(false);
  });

  it('an origin carrying a directive, a second origin or anything past host and port is a 400 naming the field, over HTTP and in process; nothing is stored', async () => {
    const s = await setup();
    const smuggled = [
      'https://shop.example;sandbox',
      'https://shop.example,https://evil.example',
      'https://shop.example;frame-ancestors *',
      'http://0x7f.0.0.1',
      'https://shop.example.',
    ];
    for (const bad of smuggled) {
      const created = expectProblem(
        await s.call('POST', '/applications', s.vault.adminKey, { name: 'checkout', type: 'public', permissions: ['token:create'], allowed_origins: [SHOP, bad] }),
        400,
      );
      expect(created.errors['allowed_origins[1]'], bad).toEqual([
        expect.stringMatching(/^must be an origin: http:\/\/ or https:\/\/, a host .* and an optional port 1-65535, nothing else/),
      ]);
      expect(created.detail).not.toContain(bad);
      const updated = expectProblem(await s.call('PUT', `/applications/${s.app.id}`, s.vault.adminKey, { name: 'checkout', allowed_origins: [bad] }), 400);
      expect(Object.keys(updated.errors)).toEqual(['allowed_origins[0]']);
      const admin = await s.vault.authenticate(s.vault.adminKey);
      const inProcess = s.vault.applications.create(admin, { name: 'checkout', type: 'public', permissions: ['token:create'], allowed_origins: [bad] });
      await expect(inProcess).rejects.toMatchObject({ code: 'validation_error', errors: { 'allowed_origins[0]': [expect.stringMatching(/must be an origin/)] } });
    }
    expect((await s.call('GET', `/applications/${s.app.id}`, s.vault.adminKey)).body.allowed_origins).toEqual([SHOP, 'https://shop.example']);
    const names = (await s.call('GET', '/applications?size=100', s.vault.adminKey)).body.data.map((a: { name: string }) => a.name);
    expect(names.filter((name: string) => name === 'checkout')).toEqual(['checkout']);
  });

  it("a frame's request from an allowed page works; from another page it is a 403 that creates nothing; without the header (not a frame) the key works as before", async () => {
    const s = await setup();
    expect((await s.call('POST', '/tokens', s.app.key, { type: 'card', data: VISA }, SHOP)).status).toBe(201);
    const refused = expectProblem(await s.call('POST', '/tokens', s.app.key, { type: 'card', data: VISA }, EVIL), 403);
    expect(refused.detail).toMatch(/does not allow browser elements on pages of "https:\/\/evil.example"/);
    expect(refused.detail).not.toContain(VISA.number);
    expectProblem(await s.call('GET', '/tenants/self', s.app.key, undefined, 'http://127.0.0.1:4001'), 403);
    expect((await s.call('POST', '/tokens', s.app.key, { type: 'card', data: VISA })).status).toBe(201);
    expect(await tokenCount(s)).toBe(2);
    // An application without a list allows any page.
    const open = (await s.call('POST', '/applications', s.vault.adminKey, { name: 'open', type: 'public', permissions: ['token:create'] })).body;
    expect(open.allowed_origins).toEqual([]);
    expect((await s.call('GET', '/tenants/self', open.key, undefined, EVIL)).status).toBe(200);
  });

  it("a browser request's Origin is checked too: another page's (or null) is a 403 creating nothing; an allowed page, the vault's own origin (its frames) and no Origin (non-browser clients) work", async () => {
    const s = await setup();
    const card = { type: 'card', data: VISA };
    // The red-team case: the public key used directly from a page, with no page-origin header.
    const direct = expectProblem(await s.call('POST', '/tokens', s.app.key, card, undefined, EVIL), 403);
    expect(direct.detail).toMatch(/does not allow requests from pages of "https:\/\/evil.example"/);
    expectProblem(await s.call('POST', '/tokens', s.app.key, card, undefined, 'null'), 403);
    expectProblem(await s.call('POST', '/tokenize', s.app.key, { a: card }, undefined, 'http://127.0.0.1:4001'), 403);
    // An allowed page naming itself does not let another page's Origin through.
    expectProblem(await s.call('POST', '/tokens', s.app.key, card, SHOP, EVIL), 403);
    expect(await tokenCount(s)).toBe(0);
    expect((await s.call('POST', '/tokens', s.app.key, card, undefined, SHOP)).status).toBe(201);
    // A frame's request: Origin is the vault's own (BASE), the page it works for is checked.
    expect((await s.call('POST', '/tokens', s.app.key, card, SHOP, new URL(BASE).origin)).status).toBe(201);
    expectProblem(await s.call('POST', '/tokens', s.app.key, card, EVIL, new URL(BASE).origin), 403);
    expect((await s.call('POST', '/tokens', s.app.key, card)).status).toBe(201);
    expect(await tokenCount(s)).toBe(3);
    // Keys of applications without a list, and of private applications, are not bound.
    const open = (await s.call('POST', '/applications', s.vault.adminKey, { name: 'open', type: 'public', permissions: ['token:create'] })).body;
    expect((await s.call('POST', '/tokens', open.key, card, undefined, EVIL)).status).toBe(201);
    const backend = await s.vault.caller({ permissions: ['token:create'] });
    expect((await s.call('POST', '/tokens', backend.key, card, undefined, 'null')).status).toBe(201);
  });

  it('a session keeps to the origins of the public application that created it, and a change of the list applies at once', async () => {
    const s = await setup();
    const backend = await s.vault.caller({ name: 'backend', permissions: ['token:read'] });
    const session = (await s.call('POST', '/sessions', s.app.key, undefined, SHOP)).body;
    expect((await s.call('POST', '/sessions/authorize', backend.key, { nonce: session.nonce, permissions: ['token:read'] })).status).toBe(204);
    expect((await s.call('GET', '/tokens', session.session_key, undefined, SHOP)).status).toBe(200);
    expectProblem(await s.call('GET', '/tokens', session.session_key, undefined, EVIL), 403);
    expect((await s.call('PUT', `/applications/${s.app.id}`, s.vault.adminKey, { name: 'checkout', allowed_origins: [EVIL] })).status).toBe(200);
    expectProblem(await s.call('GET', '/tokens', session.session_key, undefined, SHOP), 403);
    expect((await s.call('GET', '/tokens', session.session_key, undefined, EVIL)).status).toBe(200);
    expectProblem(await s.call('POST', '/tokens', s.app.key, { type: 'card', data: VISA }, SHOP), 403);
  });

  it('changing the list follows the rules for changing an application (docs/authority.md): application:update alone renames but does not change where a key works', async () => {
    const s = await setup();
    const updater = await s.vault.caller({ name: 'updater', type: 'management', permissions: ['application:update', 'application:read'] });
    const widened = expectProblem(await s.call('PUT', `/applications/${s.app.id}`, updater.key, { name: 'checkout', allowed_origins: [SHOP, EVIL] }), 403);
    expect(widened.detail).toMatch(/To change the allowed origins of application/);
    expect((await s.call('PUT', `/applications/${s.app.id}`, updater.key, { name: 'renamed' })).status).toBe(200);
    expect((await s.call('GET', `/applications/${s.app.id}`, s.vault.adminKey)).body.allowed_origins).toEqual([SHOP, 'https://shop.example']);
    expectProblem(await s.call('POST', '/tokens', s.app.key, { type: 'card', data: VISA }, EVIL), 403);
    // A tenant administrator may.
    expect((await s.call('PUT', `/applications/${s.app.id}`, s.vault.adminKey, { name: 'renamed', allowed_origins: [] })).body.allowed_origins).toEqual([]);
    expect((await s.call('POST', '/tokens', s.app.key, { type: 'card', data: VISA }, EVIL)).status).toBe(201);
  });
});
