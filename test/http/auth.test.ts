import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERMISSIONS, PERMISSIONS_BY_TYPE, type Permission } from '../../src/permissions/permissions.js';
import { ROUTES } from '../../src/http/routes/index.js';
import { ANY_APPLICATION } from '../../src/http/routes/route.js';
import { type Harness, VISA, expectProblem, harness } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('HTTP authentication', (store) => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness({}, store);
  });
  afterAll(async () => {
    await h.vault.close();
  });

  const authenticated = ROUTES.filter((route) => route.auth);
  const pathOf = (pattern: string) => pattern.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000');
  const bodyOf = (route: (typeof ROUTES)[number]) => (route.body === 'json' || route.body === 'merge-patch' ? {} : undefined);

  describe('authentication (docs/http-api.md)', () => {
    it.each(authenticated.map((r) => [r.method, r.path, r] as const))('%s %s: 401 without a key and with an unknown key', async (method, path, route) => {
      const missing = await h.call(method, pathOf(path), { body: bodyOf(route) });
      expect(expectProblem(missing, 401).title).toBe('Unauthorized');
      const unknown = await h.call(method, pathOf(path), { key: 'tv_not-a-real-key-000000000000000', body: bodyOf(route) });
      expectProblem(unknown, 401);
      expect(unknown.text).not.toContain('tv_not-a-real-key');
    });

    it('reads the key header case-insensitively', async () => {
      for (const name of ['SVC-API-KEY', 'svc-api-key', 'Svc-Api-Key']) {
        const sent = await h.handler(new Request('http://vault.test/tokens', { headers: { [name]: h.userKey } }));
        expect(sent.status).toBe(200);
      }
    });

    it('/healthz and /openapi.json need no key', async () => {
      const health = await h.call('GET', '/healthz');
      expect(health.status).toBe(200);
      expect(health.body).toEqual({ status: 'ok' });
      expect((await h.call('GET', '/openapi.json')).status).toBe(200);
    });
  });

  describe('authorization: every endpoint, called by an application lacking its permission, is a 403', () => {
    const typeFor = (permission: string) => (permission.startsWith('application:') || permission === 'log:read' ? 'management' : 'private');
    // Sessions are decided by application type, not a permission (test/http/sessions.test.ts).
    const byPermission = authenticated.filter((r) => r.permission !== ANY_APPLICATION && (PERMISSIONS as readonly string[]).includes(r.permission));
    it.each(byPermission.map((r) => [r.method, r.path, r] as const))('%s %s', async (method, path, route) => {
      const type = typeFor(route.permission);
      const others = PERMISSIONS_BY_TYPE[type].filter((p) => p !== route.permission) as Permission[];
      const key = await h.key(others, type);
      const sent = await h.call(method, pathOf(path), { key, body: bodyOf(route) });
      const problem = expectProblem(sent, 403);
      expect(problem.title).toBe('Forbidden');
      expect(problem.detail).toContain(route.permission);
    });

    it('the tenant and the permission catalog need no permission: any application reads them', async () => {
      for (const route of authenticated.filter((r) => r.permission === ANY_APPLICATION)) {
        const key = await h.key(['token:create'], 'public');
        expect((await h.call(route.method, pathOf(route.path), { key })).status, route.path).toBe(200);
      }
    });

    it('403 when the access rules do not grant the token’s container (and grant another permission there)', async () => {
      const created = (await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'card', data: VISA } })).body;
      const caller = await h.vault.caller({
        permissions: ['token:read', 'token:delete'],
        rules: [
          { priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:read'] },
          { priority: 2, container: '/', transform: 'mask', permissions: ['token:delete'] },
        ],
      });
      const sent = await h.call('GET', `/tokens/${created.id}`, { key: caller.key });
      expectProblem(sent, 403);
      expect(sent.text).not.toContain(VISA.number);
    });

    it('404, as for a missing id, when the access rules grant nothing on the token’s container', async () => {
      const created = (await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'card', data: VISA } })).body;
      const caller = await h.vault.caller({
        permissions: ['token:read'],
        rules: [{ priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:read'] }],
      });
      const sent = await h.call('GET', `/tokens/${created.id}`, { key: caller.key });
      expectProblem(sent, 404);
      expect(sent.body.detail).toBe(`Token '${created.id}' not found`);
      expect(sent.text).not.toContain(VISA.number);
    });
  });

  describe('header prefix', () => {
    it('BT: the key comes in BT-API-KEY, and SVC-API-KEY is not read', async () => {
      const bt = await harness({ headerPrefix: 'BT' }, store);
      try {
        const ok = await bt.handler(new Request('http://vault.test/tokens', { headers: { 'bt-api-key': bt.userKey } }));
        expect(ok.status).toBe(200);
        const svc = await bt.handler(new Request('http://vault.test/tokens', { headers: { 'SVC-API-KEY': bt.userKey } }));
        expect(svc.status).toBe(401);
      } finally {
        await bt.vault.close();
      }
    });

    it('validates its options once, at construction', async () => {
      const { createFetchHandler } = await import('../../src/http/index.js');
      expect(() => createFetchHandler(h.vault, { headerPrefix: 'has space' })).toThrow(/headerPrefix/);
      expect(() => createFetchHandler(h.vault, { headerPrefix: '' })).toThrow(/headerPrefix/);
      expect(() => createFetchHandler(h.vault, { maxBodyBytes: 0 })).toThrow(/maxBodyBytes/);
      expect(() => createFetchHandler(h.vault, { maxBodyBytes: 1.5 })).toThrow(/maxBodyBytes/);
      expect(() => createFetchHandler(h.vault, { logger: {} as never })).toThrow(/logger/);
    });
  });
});
