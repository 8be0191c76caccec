import { expect, it } from 'vitest';
import type { AccessRule } from '../../src/permissions/permissions.js';
import { describeEachStore } from '../support/stores.js';
import { SDK_VERSION, sdkFailure, startSdkServer } from './harness.js';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

describeEachStore(`Basis Theory SDK ${SDK_VERSION}: application keys and sessions`, (store) => {
  it('applicationKeys: create (shown once), get, getById (no secret), delete; each key works until deleted', async () => {
    const server = await startSdkServer(store);
    const admin = await server.sdk(server.adminKey);
    const app = await admin.applications.create({ name: 'backend', type: 'private', permissions: ['token:create', 'token:read'] });
    const created = await admin.applicationKeys.create(app.id);
    expect(created).toEqual({ id: expect.any(String), key: expect.stringMatching(/^tv_/), createdAt: expect.any(String), createdBy: expect.any(String) });
    const keys = await admin.applicationKeys.get(app.id);
    expect(keys.map((k) => k.id)).toHaveLength(2);
    expect(keys.every((k) => k.key === undefined)).toBe(true);
    const one = await admin.applicationKeys.getById(app.id, created.id!);
    expect(one).toEqual({ id: created.id, createdAt: created.createdAt, createdBy: created.createdBy });
    const client = await server.sdk(created.key!);
    const token = await client.tokens.create({ type: 'token', data: 'x' });
    expect(token.createdBy).toBe(app.id);
    await admin.applicationKeys.delete(app.id, created.id!);
    expect((await sdkFailure(client.tokens.retrieve(token.id))).status).toBe(401);
    expect((await sdkFailure(admin.applicationKeys.getById(app.id, created.id!))).status).toBe(404);
    // regenerate keeps working (it replaces every key with one).
    const regenerated = await admin.applications.regenerateKey(app.id);
    await expect((await server.sdk(regenerated.key!)).tokens.retrieve(token.id)).resolves.toMatchObject({ id: token.id });
    expect(await admin.applicationKeys.get(app.id)).toHaveLength(1);
  });

  it('sessions: a public application creates one, a private one authorizes it, the session key reads with those grants', async () => {
    const server = await startSdkServer(store);
    const rules: AccessRule[] = [{ description: 'cards', priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];
    const backendKey = await server.key({ permissions: ['token:create', 'token:read'], rules });
    const browserKey = await server.key({ permissions: ['token:create'], type: 'public' });
    const backend = await server.sdk(backendKey);
    const card = await backend.tokens.create({ type: 'card', data: CARD });

    const browser = await server.sdk(browserKey);
    const session = await browser.sessions.create();
    expect(session).toEqual({ sessionKey: expect.stringMatching(/^tvs_/), nonce: expect.any(String), expiresAt: expect.any(String) });
    const asSession = await server.sdk(session.sessionKey);
    expect((await sdkFailure(asSession.tokens.retrieve(card.id))).status).toBe(401);

    const readCards = [{ description: 'read cards', priority: 0, container: '/pci/', transform: 'reveal' as const, permissions: ['token:read'] }];
    await backend.sessions.authorize({ nonce: session.nonce, rules: readCards });
    expect((await asSession.tokens.retrieve(card.id)).data).toMatchObject({ number: CARD.number });
    expect((await sdkFailure(asSession.tokens.create({ type: 'token', data: 'x' }))).status).toBe(403);
    // The nonce works once; a public application cannot authorize.
    expect((await sdkFailure(backend.sessions.authorize({ nonce: session.nonce, rules: readCards }))).status).toBe(409);
    const other = await browser.sessions.create();
    expect((await sdkFailure(browser.sessions.authorize({ nonce: other.nonce, permissions: ['token:create'] }))).status).toBe(403);
    // Beyond the authorizer's grants: 403.
    expect(
      (
        await sdkFailure(
          backend.sessions.authorize({ nonce: other.nonce, rules: [{ description: 'all', priority: 0, container: '/', transform: 'reveal', permissions: ['token:read'] }] }),
        )
      ).status,
    ).toBe(403);
    server.vault.clock.advance(3 * 60 * 1000);
    expect((await sdkFailure(asSession.tokens.retrieve(card.id))).status).toBe(401);
  });
});
