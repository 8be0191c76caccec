import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ApplicationRecord, SessionAuthorization, SessionRecord, Store } from '../storage/store.js';
import { TENANT_A, TENANT_B, T0, makeApplication, makeApplicationKey } from './store-fixtures.js';

let counter = 0;
const hash = (text: string) => createHash('sha256').update(text).digest('hex');

/** A pending session of tenant A created by `app`, with overrides. */
export function makeSession(app: Pick<ApplicationRecord, 'tenantId' | 'id'>, overrides: Partial<SessionRecord> = {}): SessionRecord {
  const id = overrides.id ?? `session-${++counter}`;
  const keyHash = hash(`session key ${id}`);
  return {
    id,
    tenantId: app.tenantId,
    applicationId: app.id,
    creatorGeneration: 0,
    keyHash,
    keyLookup: keyHash.slice(0, 16),
    nonceHash: hash(`nonce ${id}`),
    createdAt: T0,
    expiresAt: T0 + 180_000,
    authorizedBy: null,
    authorizedAt: null,
    grants: null,
    authorizerGeneration: null,
    ...overrides,
  };
}

const grant = (by: string, overrides: Partial<SessionAuthorization> = {}): SessionAuthorization => ({
  authorizedBy: by,
  authorizedAt: T0 + 10,
  grants: { permissions: ['token:read'], rules: [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }] },
  authorizerGeneration: 0,
  expiresAt: null,
  ...overrides,
});

/**
 * The conformance tests of application keys and sessions (part of runStoreConformance): `store()`
 * is the fresh, migrated store of the running test, with tenants A and B.
 */
export function credentialsConformance(store: () => Store): void {
  const createApp = async (overrides: Partial<ApplicationRecord> = {}) => {
    const app = makeApplication(overrides);
    const key = makeApplicationKey(app);
    await store().createApplication(app, key);
    return { app, key };
  };

  describe('application keys', () => {
    it('adds, lists (oldest first), gets and finds keys; each authenticates as its application', async () => {
      const { app, key } = await createApp();
      const second = makeApplicationKey(app, { createdAt: T0 + 5 });
      expect(await store().createApplicationKey(second, 20)).toBe('created');
      expect(await store().listApplicationKeys(TENANT_A, app.id)).toEqual([key, second]);
      expect(await store().getApplicationKey(TENANT_A, app.id, second.id)).toEqual(second);
      expect(await store().findApplicationKeys(second.keyLookup)).toEqual([{ key: second, application: app }]);
      expect(await store().findApplicationKeys(key.keyLookup)).toEqual([{ key, application: app }]);
    });

    it('is scoped by tenant: a key is never added to, read from or deleted through another tenant', async () => {
      const { app, key } = await createApp({ tenantId: TENANT_B });
      expect(await store().createApplicationKey(makeApplicationKey({ tenantId: TENANT_A, id: app.id }), 20)).toBe('not_found');
      expect(await store().listApplicationKeys(TENANT_A, app.id)).toEqual([]);
      expect(await store().getApplicationKey(TENANT_A, app.id, key.id)).toBeNull();
      expect(await store().deleteApplicationKey(TENANT_A, app.id, key.id)).toBe('not_found');
      expect(await store().listApplicationKeys(TENANT_B, app.id)).toEqual([key]);
    });

    it('creates a key only for an existing application, and at most `max` per application', async () => {
      expect(await store().createApplicationKey(makeApplicationKey({ tenantId: TENANT_A, id: 'missing' }), 20)).toBe('not_found');
      const { app } = await createApp();
      expect(await store().createApplicationKey(makeApplicationKey(app), 2)).toBe('created');
      const third = makeApplicationKey(app);
      expect(await store().createApplicationKey(third, 2)).toBe('limit');
      expect(await store().getApplicationKey(TENANT_A, app.id, third.id)).toBeNull();
    });

    it('deletes a key once; never the last one', async () => {
      const { app, key } = await createApp();
      const second = makeApplicationKey(app);
      await store().createApplicationKey(second, 20);
      expect(await store().deleteApplicationKey(TENANT_A, app.id, key.id)).toBe('deleted');
      expect(await store().deleteApplicationKey(TENANT_A, app.id, key.id)).toBe('not_found');
      expect(await store().findApplicationKeys(key.keyLookup)).toEqual([]);
      expect(await store().deleteApplicationKey(TENANT_A, app.id, second.id)).toBe('last_key');
      expect(await store().listApplicationKeys(TENANT_A, app.id)).toEqual([second]);
    });

    it('racing deletions of the last two keys leave one (race)', async () => {
      for (let i = 0; i < 5; i++) {
        const { app, key } = await createApp();
        const second = makeApplicationKey(app);
        await store().createApplicationKey(second, 20);
        const results = await Promise.all([key, second].map((k) => Promise.resolve().then(() => store().deleteApplicationKey(TENANT_A, app.id, k.id))));
        expect(results.sort()).toEqual(['deleted', 'last_key']);
        expect(await store().listApplicationKeys(TENANT_A, app.id)).toHaveLength(1);
      }
    });

    it('racing additions never pass the limit (race)', async () => {
      const { app } = await createApp();
      const results = await Promise.all(Array.from({ length: 6 }, () => Promise.resolve().then(() => store().createApplicationKey(makeApplicationKey(app), 3))));
      expect(results.filter((r) => r === 'created')).toHaveLength(2);
      expect(await store().listApplicationKeys(TENANT_A, app.id)).toHaveLength(3);
    });

    it('replaces every key with one and stamps the application; false for a missing application', async () => {
      const { app, key } = await createApp();
      await store().createApplicationKey(makeApplicationKey(app), 20);
      const fresh = makeApplicationKey(app, { createdAt: T0 + 50 });
      expect(await store().replaceApplicationKeys(fresh, 'admin')).toBe(true);
      expect(await store().listApplicationKeys(TENANT_A, app.id)).toEqual([fresh]);
      expect(await store().findApplicationKeys(key.keyLookup)).toEqual([]);
      expect(await store().getApplication(TENANT_A, app.id)).toMatchObject({ modifiedBy: 'admin', modifiedAt: T0 + 50 });
      expect(await store().replaceApplicationKeys(makeApplicationKey({ tenantId: TENANT_B, id: app.id }), 'admin')).toBe(false);
      expect(await store().listApplicationKeys(TENANT_B, app.id)).toEqual([]);
    });

    it('counts changes of credentials: a replacement and a deletion add one each; nothing else moves it', async () => {
      const generation = async (id: string) => (await store().getApplication(TENANT_A, id))!.credentialsGeneration;
      const { app, key } = await createApp({ credentialsGeneration: 4 });
      expect(await generation(app.id)).toBe(4);
      const second = makeApplicationKey(app);
      expect(await store().createApplicationKey(second, 20)).toBe('created');
      expect(await store().updateApplication(TENANT_A, app.id, { name: 'renamed', permissions: ['token:read'], modifiedBy: 'admin', modifiedAt: T0 + 1 })).toMatchObject({
        status: 'updated',
        record: { credentialsGeneration: 4 },
      });
      expect(await store().deleteApplicationKey(TENANT_A, app.id, 'missing')).toBe('not_found');
      expect(await generation(app.id)).toBe(4);
      expect(await store().deleteApplicationKey(TENANT_A, app.id, key.id)).toBe('deleted');
      expect(await generation(app.id)).toBe(5);
      expect(await store().deleteApplicationKey(TENANT_A, app.id, second.id)).toBe('last_key');
      expect(await generation(app.id)).toBe(5);
      const fresh = makeApplicationKey(app);
      expect(await store().replaceApplicationKeys(fresh, 'admin')).toBe(true);
      expect(await generation(app.id)).toBe(6);
      expect((await store().findApplicationKeys(fresh.keyLookup))[0]!.application.credentialsGeneration).toBe(6);
      expect((await store().listApplications(TENANT_A, { mode: 'cursor', size: 100 })).items.find((a) => a.id === app.id)!.credentialsGeneration).toBe(6);
      // Another tenant's application of the same id is its own.
      const { app: other } = await createApp({ id: app.id, tenantId: TENANT_B });
      expect((await store().getApplication(TENANT_B, other.id))!.credentialsGeneration).toBe(0);
    });

    it('racing replacements and deletions each count once (race)', async () => {
      const { app } = await createApp();
      const keys = Array.from({ length: 4 }, () => makeApplicationKey(app));
      for (const k of keys) await store().createApplicationKey(k, 20);
      const results = await Promise.all([
        ...keys.map((k) => Promise.resolve().then(() => store().deleteApplicationKey(TENANT_A, app.id, k.id))),
        ...Array.from({ length: 3 }, () => Promise.resolve().then(() => store().replaceApplicationKeys(makeApplicationKey(app), 'admin'))),
      ]);
      const counted = results.filter((r) => r === 'deleted' || r === true).length;
      expect(counted).toBeGreaterThanOrEqual(3);
      expect((await store().getApplication(TENANT_A, app.id))!.credentialsGeneration).toBe(counted);
    });
  });

  describe('sessions', () => {
    it("creates a pending session and finds it by key lookup; a duplicate id or nonce answers 'exists'", async () => {
      const { app } = await createApp({ type: 'public' });
      const session = makeSession(app, { creatorGeneration: 3 });
      await store().createSession(session);
      expect(await store().findSessions(session.keyLookup)).toEqual([session]);
      expect(await store().createSession({ ...session, keyHash: hash('other'), keyLookup: 'x' })).toBe('exists');
      expect(await store().createSession(makeSession(app, { nonceHash: session.nonceHash }))).toBe('exists');
    });

    it('authorizes once by nonce, within the tenant, before expiry; an earlier expiry is kept, a later one is not', async () => {
      const { app } = await createApp({ type: 'public' });
      const session = makeSession(app);
      await store().createSession(session);
      expect(await store().authorizeSession(TENANT_B, session.nonceHash, grant('authorizer'), T0)).toEqual({ status: 'not_found' });
      expect(await store().authorizeSession(TENANT_A, hash('unknown'), grant('authorizer'), T0)).toEqual({ status: 'not_found' });
      const authorization = grant('authorizer', { expiresAt: T0 + 60_000, authorizerGeneration: 7 });
      const result = await store().authorizeSession(TENANT_A, session.nonceHash, authorization, T0);
      const expected = { ...session, authorizedBy: 'authorizer', authorizedAt: T0 + 10, grants: authorization.grants, authorizerGeneration: 7, expiresAt: T0 + 60_000 };
      expect(result).toEqual({ status: 'authorized', session: expected });
      expect(await store().findSessions(session.keyLookup)).toEqual([expected]);
      expect(await store().authorizeSession(TENANT_A, session.nonceHash, grant('other'), T0)).toEqual({ status: 'already_authorized' });
      expect((await store().findSessions(session.keyLookup))[0]).toMatchObject({ authorizedBy: 'authorizer', authorizerGeneration: 7 });

      const later = makeSession(app);
      await store().createSession(later);
      const kept = await store().authorizeSession(TENANT_A, later.nonceHash, grant('authorizer', { expiresAt: T0 + 999_999 }), T0);
      expect(kept).toMatchObject({ status: 'authorized', session: { expiresAt: later.expiresAt } });
    });

    it('an expired session cannot be authorized', async () => {
      const { app } = await createApp({ type: 'public' });
      const session = makeSession(app);
      await store().createSession(session);
      expect(await store().authorizeSession(TENANT_A, session.nonceHash, grant('a'), session.expiresAt)).toEqual({ status: 'not_found' });
      expect((await store().findSessions(session.keyLookup))[0]!.authorizedBy).toBeNull();
    });

    it('racing authorizations of one nonce: exactly one wins (race)', async () => {
      const { app } = await createApp({ type: 'public' });
      const session = makeSession(app);
      await store().createSession(session);
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => Promise.resolve().then(() => store().authorizeSession(TENANT_A, session.nonceHash, grant(`app-${i}`), T0))),
      );
      const winners = results.filter((r) => r.status === 'authorized');
      expect(winners).toHaveLength(1);
      expect(results.filter((r) => r.status === 'already_authorized')).toHaveLength(7);
      const by = (winners[0] as { session: SessionRecord }).session.authorizedBy;
      expect((await store().findSessions(session.keyLookup))[0]!.authorizedBy).toBe(by);
    });

    it('purges expired sessions only, in batches', async () => {
      const { app } = await createApp({ type: 'public' });
      const expired = [makeSession(app, { expiresAt: T0 + 1 }), makeSession(app, { expiresAt: T0 + 2 }), makeSession(app, { tenantId: TENANT_B, expiresAt: T0 + 3 })];
      const live = makeSession(app, { expiresAt: T0 + 100 });
      for (const s of [...expired, live]) await store().createSession(s);
      expect(await store().purgeExpiredSessions(T0 + 50, 2)).toBe(2);
      expect(await store().purgeExpiredSessions(T0 + 50, 2)).toBe(1);
      expect(await store().purgeExpiredSessions(T0 + 50, 2)).toBe(0);
      for (const s of expired) expect(await store().findSessions(s.keyLookup)).toEqual([]);
      expect(await store().findSessions(live.keyLookup)).toEqual([live]);
    });

    it('deleting an application deletes the sessions it created or authorized, in the same tenant only', async () => {
      const { app: creator } = await createApp({ type: 'public' });
      const { app: authorizer } = await createApp();
      const { app: otherTenant } = await createApp({ id: authorizer.id, tenantId: TENANT_B, type: 'private' });
      const created = makeSession(creator);
      const authorized = makeSession(makeApplication({ id: 'someone' }));
      const elsewhere = makeSession(makeApplication({ id: 'someone', tenantId: TENANT_B }));
      for (const s of [created, authorized, elsewhere]) await store().createSession(s);
      await store().authorizeSession(TENANT_A, authorized.nonceHash, grant(authorizer.id), T0);
      await store().authorizeSession(TENANT_B, elsewhere.nonceHash, grant(otherTenant.id), T0);
      expect(await store().deleteApplication(TENANT_A, creator.id)).toBe('deleted');
      expect(await store().findSessions(created.keyLookup)).toEqual([]);
      expect(await store().deleteApplication(TENANT_A, authorizer.id)).toBe('deleted');
      expect(await store().findSessions(authorized.keyLookup)).toEqual([]);
      expect(await store().findSessions(elsewhere.keyLookup)).toHaveLength(1);
    });
  });
}
