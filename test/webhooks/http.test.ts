import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { describeEachStore } from '../support/stores.js';
import { BASE, expectProblem, read } from '../http/helpers.js';

describeEachStore('webhooks over HTTP', (store) => {
  async function setup() {
    const vault = await store.vault();
    const handler = createFetchHandler(vault);
    const call = async (method: string, path: string, key: string, body?: unknown) => {
      const headers = new Headers({ 'SVC-API-KEY': key });
      if (body !== undefined) headers.set('content-type', 'application/json');
      return read(await handler(new Request(BASE + path, { method, headers, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) })));
    };
    return { vault, call, admin: vault.adminKey };
  }
  const HOOK = { name: 'orders', url: 'https://hooks.example.com/in', events: ['token.created', 'reactor.completed'] };

  it('create, list, get, replace and delete a webhook; the administrator holds webhook:*', async () => {
    const { call, admin } = await setup();
    const created = await call('POST', '/webhooks', admin, HOOK);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ ...HOOK, id: expect.any(String), created_at: '2030-01-01T00:00:00.000+00:00' });
    const id = created.body.id;
    expect((await call('GET', '/webhooks', admin)).body.data.map((w: any) => w.id)).toEqual([id]);
    expect((await call('GET', `/webhooks/${id}`, admin)).body).toEqual(created.body);
    const replaced = await call('PUT', `/webhooks/${id}`, admin, { name: 'n2', url: 'https://hooks.example.com/v2', events: ['token.deleted', 'token.deleted'] });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ name: 'n2', url: 'https://hooks.example.com/v2', events: ['token.deleted'] });
    expect((await call('GET', `/webhooks/${id}/deliveries`, admin)).body.data).toEqual([]);
    expect((await call('DELETE', `/webhooks/${id}`, admin)).status).toBe(204);
    expectProblem(await call('GET', `/webhooks/${id}`, admin), 404);
  });

  it('the signing secret: read and rotated by a tenant administrator only', async () => {
    const { vault, call, admin } = await setup();
    const first = await call('GET', '/webhook-secret', admin);
    expect(first.status).toBe(200);
    expect(first.body.secret).toMatch(/^whsec_/);
    expect((await call('GET', '/webhook-secret', admin)).body.secret).toBe(first.body.secret);
    const rotated = await call('POST', '/webhook-secret/rotate', admin);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(first.body.secret);
    // Whoever holds the secret can sign any webhook the tenant's receivers trust: not application:read
    // or application:update alone, nor webhook:* (docs/authority.md).
    for (const permissions of [['application:read'], ['application:read', 'application:update'], ['webhook:create', 'webhook:read', 'webhook:update']] as const) {
      const manager = await vault.caller({ permissions: [...permissions] });
      expect(expectProblem(await call('GET', '/webhook-secret', manager.key), 403).detail).toMatch(permissions.length === 3 ? /application:read/ : /tenant administrator/);
      expectProblem(await call('POST', '/webhook-secret/rotate', manager.key), 403);
    }
    expect((await call('GET', '/webhook-secret', admin)).body.secret).toBe(rotated.body.secret);
    const user = await vault.caller({ permissions: ['token:create', 'token:read'] });
    expectProblem(await call('GET', '/webhook-secret', user.key), 403);
    // Sealed with the tenant key: the secret is not in the table in clear.
    const row = await vault.store.getWebhookSecret(vault.tenantId);
    expect(Buffer.from(row!.sealed).toString('latin1')).not.toContain(rotated.body.secret.slice(6, 20));
  });

  it('permissions are enforced (403 without), and another tenant’s webhooks are not found (404)', async () => {
    const { vault, call, admin } = await setup();
    const id = (await call('POST', '/webhooks', admin, HOOK)).body.id;
    const readOnly = await vault.caller({ permissions: ['webhook:read'] });
    expect((await call('GET', `/webhooks/${id}`, readOnly.key)).status).toBe(200);
    expectProblem(await call('POST', '/webhooks', readOnly.key, HOOK), 403);
    expectProblem(await call('PUT', `/webhooks/${id}`, readOnly.key, HOOK), 403);
    expectProblem(await call('DELETE', `/webhooks/${id}`, readOnly.key), 403);
    const apps = await vault.caller({ permissions: ['application:read', 'application:create'] });
    expectProblem(await call('GET', '/webhooks', apps.key), 403);
    expectProblem(await call('GET', `/webhooks/${id}/deliveries`, apps.key), 403);
    expectProblem(await call('GET', '/webhook-deliveries', apps.key), 403);
    const other = await vault.createTenant({ name: 'other' });
    const otherKey = other.application.key;
    expectProblem(await call('GET', `/webhooks/${id}`, otherKey), 404);
    expectProblem(await call('PUT', `/webhooks/${id}`, otherKey, HOOK), 404);
    expectProblem(await call('DELETE', `/webhooks/${id}`, otherKey), 404);
    expectProblem(await call('GET', `/webhooks/${id}/deliveries`, otherKey), 404);
    expect((await call('GET', '/webhooks', otherKey)).body.data).toEqual([]);
    expect((await call('GET', `/webhooks/${id}`, admin)).body).toMatchObject(HOOK);
  });

  it('bad input is a 4xx naming the field and changes nothing', async () => {
    const { call, admin } = await setup();
    const id = (await call('POST', '/webhooks', admin, HOOK)).body.id;
    const cases: [unknown, string][] = [
      [{ ...HOOK, events: [] }, 'events'],
      [{ ...HOOK, events: ['token.read'] }, 'events[0]'],
      [{ ...HOOK, events: 'token.created' }, 'events'],
      [{ ...HOOK, url: 'ftp://example.com/' }, 'url'],
      [{ ...HOOK, url: 'not a url' }, 'url'],
      [{ ...HOOK, url: 'https://user:pw@example.com/' }, 'url'],
      [{ ...HOOK, url: `https://example.com/${'a'.repeat(2100)}` }, 'url'],
      [{ ...HOOK, name: '' }, 'name'],
      [{ ...HOOK, name: 'x'.repeat(201) }, 'name'],
      [{ ...HOOK, extra: 1 }, 'extra'],
      [{ url: HOOK.url, events: HOOK.events }, 'name'],
      [[HOOK], 'body'],
    ];
    for (const [body, field] of cases) {
      for (const [method, path] of [
        ['POST', '/webhooks'],
        ['PUT', `/webhooks/${id}`],
      ] as const) {
        const problem = expectProblem(await call(method, path, admin, body), 400);
        expect(Object.keys(problem.errors)).toContain(field);
      }
    }
    expectProblem(await call('POST', '/webhooks', admin, '{"name":'), 400);
    expectProblem(await call('GET', '/webhooks/nope', admin), 404);
    expectProblem(await call('GET', '/webhook-deliveries/nope', admin), 404);
    expectProblem(await call('POST', '/webhook-deliveries/nope/retry', admin), 404);
    expectProblem(await call('GET', '/webhooks?size=0', admin), 400);
    const list = (await call('GET', '/webhooks', admin)).body.data;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject(HOOK);
  });
});
