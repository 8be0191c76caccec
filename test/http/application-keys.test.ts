import { expect, it } from 'vitest';
import { describeEachStore } from '../support/stores.js';
import { over } from './credentials-helpers.js';
import { expectProblem } from './helpers.js';

describeEachStore('application keys over HTTP', (store) => {
  async function setup() {
    const vault = await store.vault();
    const call = over(vault);
    const app = (await call('POST', '/applications', vault.adminKey, { name: 'backend', type: 'private', permissions: ['token:create', 'token:read'] })).body;
    return { vault, call, app };
  }

  it('adds keys (each shown once), lists and gets them without secrets; every key authenticates as the application', async () => {
    const { vault, call, app } = await setup();
    const created = await call('POST', `/applications/${app.id}/keys`, vault.adminKey);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      key: expect.stringMatching(/^tv_[A-Za-z0-9_-]{43}$/),
      created_at: '2030-01-01T00:00:00.000+00:00',
      created_by: expect.any(String),
    });
    const list = await call('GET', `/applications/${app.id}/keys`, vault.adminKey);
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(2);
    expect(list.body[1]).toEqual({ id: created.body.id, created_at: created.body.created_at, created_by: created.body.created_by });
    expect(list.text).not.toContain(created.body.key);
    expect(list.text).not.toContain(app.key);
    const one = await call('GET', `/applications/${app.id}/keys/${created.body.id}`, vault.adminKey);
    expect(one.body).toEqual(list.body[1]);
    for (const key of [app.key, created.body.key]) {
      const token = await call('POST', '/tokens', key, { type: 'token', data: 'x' });
      expect(token.status).toBe(201);
      expect(token.body.created_by).toBe(app.id);
    }
    // Stored hashed: no key in any row of the keys table.
    const rows = JSON.stringify(await vault.store.listApplicationKeys(vault.tenantId, app.id));
    expect(rows).not.toContain(created.body.key);
    expect(rows).not.toContain(app.key);
  });

  it('a deleted key stops working at once (auth cache included); the last key cannot be deleted (409)', async () => {
    const { vault, call, app } = await setup();
    const second = (await call('POST', `/applications/${app.id}/keys`, vault.adminKey)).body;
    expect((await call('GET', '/tokens', second.key)).status).toBe(200); // now remembered by the auth cache
    const first = (await call('GET', `/applications/${app.id}/keys`, vault.adminKey)).body[0];
    expect((await call('DELETE', `/applications/${app.id}/keys/${second.id}`, vault.adminKey)).status).toBe(204);
    expect(expectProblem(await call('GET', '/tokens', second.key), 401).detail).toMatch(/not valid/);
    expect((await call('GET', '/tokens', app.key)).status).toBe(200);
    expect(expectProblem(await call('DELETE', `/applications/${app.id}/keys/${first.id}`, vault.adminKey), 409).detail).toMatch(/only key/);
    expectProblem(await call('DELETE', `/applications/${app.id}/keys/${second.id}`, vault.adminKey), 404);
    expectProblem(await call('GET', `/applications/${app.id}/keys/${second.id}`, vault.adminKey), 404);
  });

  it('regenerate replaces every key with one new key', async () => {
    const { vault, call, app } = await setup();
    const second = (await call('POST', `/applications/${app.id}/keys`, vault.adminKey)).body;
    const regenerated = await call('POST', `/applications/${app.id}/regenerate`, vault.adminKey);
    expect(regenerated.status).toBe(200);
    for (const old of [app.key, second.key]) expectProblem(await call('GET', '/tokens', old), 401);
    expect((await call('GET', '/tokens', regenerated.body.key)).status).toBe(200);
    expect((await call('GET', `/applications/${app.id}/keys`, vault.adminKey)).body).toHaveLength(1);
  });

  it('permissions: application:update to add and delete, application:read to read; private applications and sessions cannot', async () => {
    const { vault, call, app } = await setup();
    const reader = (await vault.caller({ permissions: ['application:read'] })).key;
    const keyId = (await call('GET', `/applications/${app.id}/keys`, vault.adminKey)).body[0].id;
    expect(expectProblem(await call('POST', `/applications/${app.id}/keys`, reader), 403).detail).toContain('application:update');
    expect(expectProblem(await call('DELETE', `/applications/${app.id}/keys/${keyId}`, reader), 403).detail).toContain('application:update');
    expect((await call('GET', `/applications/${app.id}/keys`, reader)).status).toBe(200);
    // The application itself (private) cannot add keys to itself nor read them.
    expectProblem(await call('POST', `/applications/${app.id}/keys`, app.key), 403);
    expectProblem(await call('GET', `/applications/${app.id}/keys`, app.key), 403);
    expect((await call('GET', `/applications/${app.id}/keys`, vault.adminKey)).body).toHaveLength(1);
  });

  it('unknown applications and another tenant’s are 404; a key of tenant A never authenticates into tenant B', async () => {
    const { vault, call, app } = await setup();
    expectProblem(await call('POST', '/applications/00000000-0000-4000-8000-000000000000/keys', vault.adminKey), 404);
    expectProblem(await call('GET', '/applications/00000000-0000-4000-8000-000000000000/keys', vault.adminKey), 404);
    const other = await vault.createTenant({ name: 'B' });
    const adminB = other.application.key;
    expectProblem(await call('POST', `/applications/${app.id}/keys`, adminB), 404);
    expectProblem(await call('GET', `/applications/${app.id}/keys`, adminB), 404);
    const keyId = (await call('GET', `/applications/${app.id}/keys`, vault.adminKey)).body[0].id;
    expectProblem(await call('GET', `/applications/${app.id}/keys/${keyId}`, adminB), 404);
    expectProblem(await call('DELETE', `/applications/${app.id}/keys/${keyId}`, adminB), 404);
    // A's key acts in A only: tenant B's admin cannot see its application, and A's token is not in B.
    const token = (await call('POST', '/tokens', app.key, { type: 'token', data: 'a' })).body;
    expect(token.tenant_id).toBe(vault.tenantId);
    const readerB = (await call('POST', '/applications', adminB, { name: 'b', type: 'private', permissions: ['token:read'] })).body.key;
    expectProblem(await call('GET', `/tokens/${token.id}`, readerB), 404);
    expect((await call('GET', `/applications/${app.id}`, adminB)).status).toBe(404);
  });

  it('at most 20 keys per application (409 beyond)', async () => {
    const { vault, call, app } = await setup();
    for (let i = 1; i < 20; i++) expect((await call('POST', `/applications/${app.id}/keys`, vault.adminKey)).status).toBe(201);
    expect(expectProblem(await call('POST', `/applications/${app.id}/keys`, vault.adminKey), 409).detail).toMatch(/20 keys/);
  });

  it('audits key creation and deletion by application and key id, never the key', async () => {
    const { vault, call, app } = await setup();
    const second = (await call('POST', `/applications/${app.id}/keys`, vault.adminKey)).body;
    await call('DELETE', `/applications/${app.id}/keys/${second.id}`, vault.adminKey);
    const logReader = (await vault.caller({ permissions: ['log:read'] })).key;
    const entries = (await call('GET', `/logs?resource_id=${app.id}`, logReader)).body.data as { operation: string; detail: string }[];
    const ops = entries.map((e) => `${e.operation} ${e.detail}`);
    expect(ops).toEqual(expect.arrayContaining([`application:key_create key:${second.id}`, `application:key_delete key:${second.id}`]));
    expect(JSON.stringify(entries)).not.toContain(second.key);
  });
});
