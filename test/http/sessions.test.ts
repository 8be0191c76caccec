import { expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { describeEachStore } from '../support/stores.js';
import { over } from './credentials-helpers.js';
import { VISA, expectProblem } from './helpers.js';

const PCI_REVEAL = [
  { priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:create', 'token:read'] },
  { priority: 1, container: '/', transform: 'mask', permissions: ['token:create', 'token:read'] },
];

describeEachStore('sessions over HTTP', (store) => {
  async function setup() {
    const vault = await store.vault();
    const call = over(vault);
    const browser = (await vault.caller({ name: 'browser', type: 'public', permissions: ['token:create'] })).key;
    const backendApp = await vault.caller({ name: 'backend', permissions: ['token:create', 'token:read', 'token:use'], rules: PCI_REVEAL as never });
    const card = (await call('POST', '/tokens', backendApp.key, { type: 'card', data: VISA })).body;
    const note = (await call('POST', '/tokens', backendApp.key, { type: 'token', data: 'a private note' })).body;
    return { vault, call, browser, backend: backendApp.key, backendId: backendApp.applicationId, card, note };
  }

  async function authorized(
    s: Awaited<ReturnType<typeof setup>>,
    grant: Record<string, unknown> = { rules: [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }] },
  ) {
    const session = (await s.call('POST', '/sessions', s.browser)).body;
    expect((await s.call('POST', '/sessions/authorize', s.backend, { nonce: session.nonce, ...grant })).status).toBe(204);
    return session as { session_key: string; nonce: string; expires_at: string };
  }

  it('a public application creates a session; once a private one authorizes it, the key acts with exactly those grants', async () => {
    const s = await setup();
    const created = await s.call('POST', '/sessions', s.browser);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ session_key: expect.stringMatching(/^tvs_[A-Za-z0-9_-]{43}$/), nonce: expect.any(String), expires_at: '2030-01-01T00:03:00.000+00:00' });
    const key = created.body.session_key;
    expect(expectProblem(await s.call('GET', `/tokens/${s.card.id}`, key), 401).detail).toMatch(/not authorized yet/);
    const grant = { nonce: created.body.nonce, rules: [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }] };
    const authorize = await s.call('POST', '/sessions/authorize', s.backend, grant);
    expect(authorize.status).toBe(204);
    expect(authorize.text).toBe('');
    const read = await s.call('GET', `/tokens/${s.card.id}`, key);
    expect(read.status).toBe(200);
    expect(read.body.data.number).toBe(VISA.number);
    // Exactly those grants: not /general/ (where the session holds none, so the note is not found), not token:create, not token:use.
    expectProblem(await s.call('GET', `/tokens/${s.note.id}`, key), 404);
    expectProblem(await s.call('POST', '/tokens', key, { type: 'token', data: 'x' }), 403);
    expect((await s.call('GET', '/tokens', key)).body.data.map((t: { id: string }) => t.id)).toEqual([s.card.id]);
  });

  it('permissions (instead of rules) hold on every container, so the authorizer must hold them there too', async () => {
    const s = await setup();
    // The backend's rules grant token:read on / (mask) and /pci/ (reveal): token:read on every container is within them.
    const session = await authorized(s, { permissions: ['token:read'] });
    const read = await s.call('GET', `/tokens/${s.card.id}`, session.session_key);
    expect(read.body.data.number).toBe('XXXXXXXXXXXX4242'); // the implicit rule masks
    // token:use is held by the backend only through its implicit-free rules: none list it, so it is not on every container.
    const other = (await s.call('POST', '/sessions', s.browser)).body;
    expect(expectProblem(await s.call('POST', '/sessions/authorize', s.backend, { nonce: other.nonce, permissions: ['token:use'] }), 403).detail).toMatch(/exceed/);
  });

  it('expires after 3 minutes (401 saying so), also when the key was just remembered by the auth cache; the sweep removes it', async () => {
    const s = await setup();
    const session = await authorized(s);
    s.vault.clock.advance(3 * 60 * 1000 - 500);
    expect((await s.call('GET', `/tokens/${s.card.id}`, session.session_key)).status).toBe(200); // remembered for 1 s
    s.vault.clock.advance(500);
    expect(expectProblem(await s.call('GET', `/tokens/${s.card.id}`, session.session_key), 401).detail).toMatch(/expired/);
    expect((await s.vault.sweep()).sessionsRemoved).toBe(1);
    expect(expectProblem(await s.call('GET', `/tokens/${s.card.id}`, session.session_key), 401).detail).toMatch(/not valid/);
    // An expired pending session cannot be authorized.
    const late = (await s.call('POST', '/sessions', s.browser)).body;
    s.vault.clock.advance(3 * 60 * 1000);
    expectProblem(await s.call('POST', '/sessions/authorize', s.backend, { nonce: late.nonce, permissions: ['token:read'] }), 404);
  });

  it('expires_at may bring the expiry closer, never further', async () => {
    const s = await setup();
    const session = await authorized(s, { permissions: ['token:read'], expires_at: '2030-01-01T00:01:00Z' });
    s.vault.clock.advance(60 * 1000);
    expectProblem(await s.call('GET', `/tokens/${s.card.id}`, session.session_key), 401);
    const other = (await s.call('POST', '/sessions', s.browser)).body;
    const problem = expectProblem(
      await s.call('POST', '/sessions/authorize', s.backend, { nonce: other.nonce, permissions: ['token:read'], expires_at: '2030-01-01T01:00:00Z' }),
      400,
    );
    expect(problem.errors.expires_at[0]).toMatch(/closer/);
  });

  it('a nonce is used once (409); unknown nonces and another tenant’s are 404', async () => {
    const s = await setup();
    const session = await authorized(s);
    expect(expectProblem(await s.call('POST', '/sessions/authorize', s.backend, { nonce: session.nonce, permissions: ['token:read'] }), 409).detail).toMatch(/once/);
    expectProblem(await s.call('POST', '/sessions/authorize', s.backend, { nonce: 'no-such-nonce', permissions: ['token:read'] }), 404);
    const b = await s.vault.createTenant({ name: 'B' });
    const backendB = (await s.call('POST', '/applications', b.application.key, { name: 'b', type: 'private', permissions: ['token:read'] })).body.key;
    const pending = (await s.call('POST', '/sessions', s.browser)).body;
    expectProblem(await s.call('POST', '/sessions/authorize', backendB, { nonce: pending.nonce, permissions: ['token:read'] }), 404);
    expectProblem(await s.call('GET', '/tokens', pending.session_key), 401);
  });

  it('a session of tenant A never acts in tenant B', async () => {
    const s = await setup();
    const b = await s.vault.createTenant({ name: 'B' });
    const writerB = (await s.call('POST', '/applications', b.application.key, { name: 'b', type: 'private', permissions: ['token:create'] })).body.key;
    const tokenB = (await s.call('POST', '/tokens', writerB, { type: 'card', data: VISA })).body;
    const session = await authorized(s, { permissions: ['token:read'] });
    expectProblem(await s.call('GET', `/tokens/${tokenB.id}`, session.session_key), 404);
    expect((await s.call('GET', '/tokens', session.session_key)).body.data.every((t: { tenant_id: string }) => t.tenant_id === s.vault.tenantId)).toBe(true);
  });

  it('only public applications create sessions and only private ones authorize them; a session key does neither, nor manage keys or reactors', async () => {
    const s = await setup();
    expect(expectProblem(await s.call('POST', '/sessions', s.backend), 403).detail).toMatch(/public/);
    expectProblem(await s.call('POST', '/sessions', s.vault.adminKey), 403);
    const pending = (await s.call('POST', '/sessions', s.browser)).body;
    // A public application cannot authorize its own session, nor can a management application.
    expect(expectProblem(await s.call('POST', '/sessions/authorize', s.browser, { nonce: pending.nonce, permissions: ['token:create'] }), 403).detail).toMatch(/private/);
    expectProblem(await s.call('POST', '/sessions/authorize', s.vault.adminKey, { nonce: pending.nonce, permissions: ['token:read'] }), 403);
    const session = await authorized(s, { permissions: ['token:read', 'token:create'] });
    const key = session.session_key;
    expect(expectProblem(await s.call('POST', '/sessions', key), 403).detail).toMatch(/session key/);
    expect(expectProblem(await s.call('POST', '/sessions/authorize', key, { nonce: pending.nonce, permissions: ['token:read'] }), 403).detail).toMatch(/session key/);
    const app = (await s.call('GET', '/applications', s.vault.adminKey)).body.data[0];
    expectProblem(await s.call('POST', `/applications/${app.id}/keys`, key), 403);
    expectProblem(await s.call('POST', '/applications', key, { name: 'x', type: 'private' }), 403);
    expectProblem(await s.call('POST', '/reactor-formulas', key, { name: 'f', code: 'module.exports = async () => ({})' }), 403);
    // The pending session is still pending: nothing above authorized it.
    expectProblem(await s.call('GET', '/tokens', pending.session_key), 401);
  });

  it('refuses grants beyond the authorizer’s: a permission it lacks, broader containers, a more revealing transform (403)', async () => {
    const s = await setup();
    const attempts = [
      { permissions: ['token:delete'] },
      { rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:read'] }] },
      { rules: [{ priority: 0, container: '/general/', transform: 'reveal', permissions: ['token:read'] }] },
      { rules: [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:use'] }] },
    ];
    for (const grant of attempts) {
      const pending = (await s.call('POST', '/sessions', s.browser)).body;
      expectProblem(await s.call('POST', '/sessions/authorize', s.backend, { nonce: pending.nonce, ...grant }), 403);
      // Refused: the nonce stays unused and the key unauthorized.
      expectProblem(await s.call('GET', '/tokens', pending.session_key), 401);
    }
  });

  it('bad input is a 400 naming the field, and changes nothing', async () => {
    const s = await setup();
    const pending = (await s.call('POST', '/sessions', s.browser)).body;
    const bad: [unknown, string][] = [
      [{ nonce: pending.nonce }, 'body'],
      [{ nonce: pending.nonce, permissions: ['token:read'], rules: [{ priority: 0, container: '/', transform: 'mask', permissions: ['token:read'] }] }, 'body'],
      [{ nonce: 42, permissions: ['token:read'] }, 'nonce'],
      [{ nonce: pending.nonce, permissions: ['reactor:create'] }, 'permissions[0]'],
      [{ nonce: pending.nonce, permissions: ['token:fly'] }, 'permissions[0]'],
      [{ nonce: pending.nonce, permissions: [] }, 'permissions'],
      [{ nonce: pending.nonce, rules: [{ priority: 0, container: 'pci', transform: 'reveal', permissions: ['token:read'] }] }, 'rules[0].container'],
      [{ nonce: pending.nonce, permissions: ['token:read'], expires_at: 'soon' }, 'expires_at'],
      [{ nonce: pending.nonce, permissions: ['token:read'], admin: true }, 'admin'],
      [[pending.nonce], 'body'],
    ];
    for (const [body, field] of bad) {
      const problem = expectProblem(await s.call('POST', '/sessions/authorize', s.backend, body), 400);
      expect(Object.keys(problem.errors ?? {}), JSON.stringify(body)).toContain(field);
    }
    expectProblem(await s.call('POST', '/sessions/authorize', s.backend, '{"nonce":'), 400);
    expectProblem(await s.call('POST', '/sessions/authorize', s.backend, { nonce: pending.nonce }, 'text/plain'), 415);
    expectProblem(await s.call('GET', '/tokens', pending.session_key), 401);
  });

  it('later reductions of the authorizer’s grants apply to its sessions at once; deleting it ends them', async () => {
    const s = await setup();
    const session = await authorized(s);
    expect((await s.call('GET', `/tokens/${s.card.id}`, session.session_key)).body.data.number).toBe(VISA.number);
    const masked = [{ priority: 0, container: '/', transform: 'mask', permissions: ['token:create', 'token:read'] }];
    expect((await s.call('PUT', `/applications/${s.backendId}`, s.vault.adminKey, { name: 'backend', permissions: ['token:create', 'token:read'], rules: masked })).status).toBe(
      200,
    );
    expect((await s.call('GET', `/tokens/${s.card.id}`, session.session_key)).body.data.number).toBe('XXXXXXXXXXXX4242');
    await s.call('PUT', `/applications/${s.backendId}`, s.vault.adminKey, { name: 'backend', permissions: ['token:create'], rules: [] });
    expectProblem(await s.call('GET', `/tokens/${s.card.id}`, session.session_key), 403);
    expect((await s.call('DELETE', `/applications/${s.backendId}`, s.vault.adminKey)).status).toBe(204);
    expectProblem(await s.call('GET', `/tokens/${s.card.id}`, session.session_key), 401);
  });

  it('regenerating or deleting a key of the authorizer, or of the public application that created it, ends a session (401 saying which)', async () => {
    const s = await setup();
    const read = (key: string) => s.call('GET', `/tokens/${s.card.id}`, key);
    const browserId = (await s.vault.authenticate(s.browser)).applicationId;
    // The authorizer's keys regenerated: its sessions end; one authorized with the new key works.
    const first = await authorized(s);
    expect((await read(first.session_key)).status).toBe(200);
    const regenerated = await s.call('POST', `/applications/${s.backendId}/regenerate`, s.vault.adminKey);
    expect(regenerated.status).toBe(200);
    expect(expectProblem(await read(first.session_key), 401).detail).toMatch(/session has ended: the keys of the application that authorized it were regenerated/);
    s.backend = regenerated.body.key;
    const second = await authorized(s);
    expect((await read(second.session_key)).status).toBe(200);
    // Adding a key changes nothing; deleting any key of the authorizer (not only the one used) ends its sessions.
    const extra = await s.call('POST', `/applications/${s.backendId}/keys`, s.vault.adminKey);
    expect(extra.status).toBe(201);
    expect((await read(second.session_key)).status).toBe(200);
    expect((await s.call('DELETE', `/applications/${s.backendId}/keys/${extra.body.id}`, s.vault.adminKey)).status).toBe(204);
    expect(expectProblem(await read(second.session_key), 401).detail).toMatch(/ended: the keys of the application that authorized it/);
    // The creating public application's keys regenerated: its sessions end too, pending ones included.
    const third = await authorized(s);
    const pending = (await s.call('POST', '/sessions', s.browser)).body;
    expect((await read(third.session_key)).status).toBe(200);
    const browser = await s.call('POST', `/applications/${browserId}/regenerate`, s.vault.adminKey);
    expect(browser.status).toBe(200);
    expect(expectProblem(await read(third.session_key), 401).detail).toMatch(/ended: the keys of the application that created it/);
    expect((await s.call('POST', '/sessions/authorize', s.backend, { nonce: pending.nonce, permissions: ['token:read'] })).status).toBe(204);
    expect(expectProblem(await read(pending.session_key), 401).detail).toMatch(/that created it/);
    expectProblem(await s.call('POST', '/sessions', s.browser), 401);
    // Sessions made after the change work.
    s.browser = browser.body.key;
    expect((await read((await authorized(s)).session_key)).status).toBe(200);
    // The creating application deleted: its sessions end.
    const fourth = await authorized(s);
    expect((await s.call('DELETE', `/applications/${browserId}`, s.vault.adminKey)).status).toBe(204);
    expectProblem(await read(fourth.session_key), 401);
  });

  it('the audit trail names the session: its creation, its authorization and what it did; keys and nonces are stored hashed', async () => {
    const s = await setup();
    const session = await authorized(s, { permissions: ['token:create', 'token:read'] });
    const created = (await s.call('POST', '/tokens', session.session_key, { type: 'token', data: 'from the browser' })).body;
    const [stored] = await s.vault.store.findSessions(hashApiKey(session.session_key).keyLookup);
    expect(created.created_by).toBe(stored!.id);
    const logReader = (await s.vault.caller({ permissions: ['log:read'] })).key;
    const entries = (await s.call('GET', `/logs?resource_id=${stored!.id}`, logReader)).body.data as { actor: string; operation: string }[];
    const browserId = stored!.applicationId;
    expect(entries.map((e) => [e.operation, e.actor])).toEqual([
      ['session:create', browserId],
      ['session:authorize', s.backendId],
    ]);
    const acts = (await s.call('GET', `/logs?actor=${stored!.id}`, logReader)).body.data as { operation: string; resource_id: string }[];
    expect(acts.map((e) => [e.operation, e.resource_id])).toEqual([['token:create', created.id]]);
    const rows = JSON.stringify(stored);
    expect(rows).not.toContain(session.session_key);
    expect(rows).not.toContain(session.nonce);
  });
});
