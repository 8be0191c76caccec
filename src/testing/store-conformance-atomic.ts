import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InternalError } from '../errors/errors.js';
import type { ApplicationRecord, Store } from '../storage/store.js';
import { APP_B, T0, TENANT_A, TENANT_B, makeApplication, makeApplicationKey, makeFormula, makeReactor, makeToken } from './store-conformance.js';

/*
 * Store conformance, atomic operations: record updates (applications, formulas,
 * reactors) write only the fields they name, under their precondition; a bulk creation of tokens
 * and a tenant's creation are all-or-nothing. Registered by runStoreConformance.
 */

const stamp = { modifiedBy: APP_B, modifiedAt: T0 + 1 };
const ADMIN = ['application:create', 'application:update', 'application:read'] as const;
const KEEP = ['application:create', 'application:update'] as const;

/** Registers the atomic-operations part of the Store conformance suite. */
export function runAtomicConformance(name: string, factory: () => Store | Promise<Store>, cleanup?: (store: Store) => void | Promise<void>): void {
  describe(`Store conformance, atomic operations: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await factory();
      await store.migrate();
      await store.createTenant({ id: TENANT_A, name: 'Tenant A', createdAt: T0 });
      await store.createTenant({ id: TENANT_B, name: 'Tenant B', createdAt: T0 + 1 });
    });
    const createApp = (app: ApplicationRecord) => Promise.resolve().then(() => store.createApplication(app, makeApplicationKey(app)));
    afterEach(async () => {
      if (cleanup) await cleanup(store);
      else await store.close();
    });

    it('an application update writes only the fields it names: a rename and new permissions from stale reads both stay', async () => {
      const app = makeApplication({ type: 'management', permissions: [...ADMIN], rules: [] });
      await createApp(app);
      // Both callers read `app`; each writes its own field.
      await store.updateApplication(TENANT_A, app.id, { name: 'renamed', ...stamp });
      const result = await store.updateApplication(TENANT_A, app.id, { permissions: ['application:create', 'application:update'], rules: [], ...stamp }, KEEP);
      const expected = { ...app, name: 'renamed', permissions: ['application:create', 'application:update'], ...stamp };
      expect(result).toEqual({ status: 'updated', record: expected });
      expect(await store.getApplication(TENANT_A, app.id)).toEqual(expected);
    });

    it('concurrent application updates of the permissions (guarded) and replacements of its keys lose neither (race)', async () => {
      const app = makeApplication({ type: 'management', permissions: [...ADMIN], rules: [] });
      const other = makeApplication({ type: 'management', permissions: [...ADMIN], rules: [] });
      await createApp(app);
      await createApp(other);
      for (let i = 0; i < 8; i++) {
        const permissions = i % 2 === 0 ? (['application:read'] as const) : ADMIN;
        const key = makeApplicationKey(app, { id: `key-${i}`, keyHash: String(i).repeat(64), createdAt: T0 + 1 });
        const [updated, rekeyed] = await Promise.all([
          Promise.resolve().then(() => store.updateApplication(TENANT_A, app.id, { permissions: [...permissions], ...stamp }, KEEP)),
          Promise.resolve().then(() => store.replaceApplicationKeys(key, APP_B)),
        ]);
        expect(updated.status).toBe('updated');
        expect(rekeyed).toBe(true);
        expect(await store.getApplication(TENANT_A, app.id)).toMatchObject({ permissions: [...permissions] });
        expect((await store.listApplicationKeys(TENANT_A, app.id)).map((k) => k.keyHash)).toEqual([key.keyHash]);
      }
    });

    it('a formula update with a precondition writes only while the code and declarations are still those', async () => {
      const formula = makeFormula({ description: 'kept?' });
      await store.createFormula(formula);
      const read = { ...formula };
      // Another caller changes the code after `read`.
      const changedCode = await store.updateFormula(TENANT_A, formula.id, { code: 'module.exports = async () => ({ raw: 2 });', ...stamp });
      expect(changedCode.status).toBe('updated');
      expect(await store.updateFormula(TENANT_A, formula.id, { name: 'stale rename', ...stamp }, read)).toEqual({ status: 'changed' });
      expect((await store.getFormula(TENANT_A, formula.id))?.name).toBe(formula.name);
      expect(await store.updateFormula(TENANT_A, 'missing', { name: 'x', ...stamp }, read)).toEqual({ status: 'not_found' });
      const fresh = (await store.getFormula(TENANT_A, formula.id))!;
      const renamed = await store.updateFormula(TENANT_A, formula.id, { name: 'renamed', description: null, ...stamp }, fresh);
      expect(renamed).toEqual({ status: 'updated', record: { ...fresh, name: 'renamed', description: null, ...stamp } });
    });

    it('a reactor update with a precondition writes only while the reactor is bound as expected', async () => {
      await store.createFormula(makeFormula({ id: 'f' }));
      const reactor = makeReactor({ formulaId: 'f', applicationId: null });
      await store.createReactor(reactor);
      expect(await store.updateReactor(TENANT_A, reactor.id, { applicationId: 'bound-meanwhile', ...stamp })).toMatchObject({ status: 'updated' });
      expect(await store.updateReactor(TENANT_A, reactor.id, { configuration: { API_KEY: 'stale' }, ...stamp }, { applicationId: null })).toEqual({ status: 'changed' });
      expect((await store.getReactor(TENANT_A, reactor.id))?.configuration).toEqual(reactor.configuration);
      const result = await store.updateReactor(TENANT_A, reactor.id, { name: 'New Name', applicationId: null, ...stamp }, { applicationId: 'bound-meanwhile' });
      expect(result).toEqual({ status: 'updated', record: { ...reactor, name: 'New Name', applicationId: null, ...stamp } });
      expect((await store.listReactors(TENANT_A, { name: 'new na' }, { mode: 'offset', size: 10, page: 1 })).items.map((r) => r.id)).toEqual([reactor.id]);
    });

    it('createTokens: an id conflict (with a stored token or an earlier item) writes none of the call', async () => {
      const stored = makeToken({ id: 'stored' });
      expect(await store.createToken(stored, T0)).toEqual({ status: 'created' });
      const fresh = [makeToken({ id: 'n1' }), makeToken({ id: 'n2' })];
      expect(await store.createTokens([...fresh, makeToken({ id: 'stored' })], T0)).toEqual({ status: 'id_conflict', index: 2 });
      expect(await store.createTokens([...fresh, makeToken({ id: 'n1' })], T0)).toEqual({ status: 'id_conflict', index: 2 });
      for (const token of fresh) expect(await store.getToken(TENANT_A, token.id, T0)).toBeNull();
      const ids = (await store.listTokens(TENANT_A, {}, { mode: 'offset', size: 10, page: 1 }, T0)).items.map((t) => t.id);
      expect(ids).toEqual(['stored']);
    });

    it('createTokens: stores every item in order, deduplicating against stored tokens and earlier items', async () => {
      const existing = makeToken({ id: 'existing', fingerprint: 'fp-old', deduplicate: true });
      await store.createToken(existing, T0);
      const items = [
        makeToken({ id: 'b1', fingerprint: 'fp-new', deduplicate: true }),
        makeToken({ id: 'b2', fingerprint: 'fp-new', deduplicate: true }),
        makeToken({ id: 'b3', fingerprint: 'fp-old', deduplicate: true }),
        makeToken({ id: 'b4' }),
      ];
      const result = await store.createTokens(items, T0);
      if (result.status !== 'created') throw new Error(`expected created, got ${result.status}`);
      expect(result.results.map((r) => (r.status === 'duplicate' ? `duplicate:${r.existing.id}` : r.status))).toEqual(['created', 'duplicate:b1', 'duplicate:existing', 'created']);
      const ids = (await store.listTokens(TENANT_A, {}, { mode: 'offset', size: 10, page: 1 }, T0)).items.map((t) => t.id);
      expect(ids).toEqual(['existing', 'b1', 'b4']);
    });

    it('createTokens: two concurrent calls deduplicating the same fingerprints in opposite orders store each once (race)', async () => {
      const call = (prefix: string, order: string[]) => order.map((fp) => makeToken({ id: `${prefix}-${fp}`, fingerprint: fp, deduplicate: true }));
      const [one, two] = await Promise.all([
        Promise.resolve().then(() => store.createTokens(call('x', ['fp-a', 'fp-b']), T0)),
        Promise.resolve().then(() => store.createTokens(call('y', ['fp-b', 'fp-a']), T0)),
      ]);
      expect(one.status).toBe('created');
      expect(two.status).toBe('created');
      const page = await store.listTokens(TENANT_A, {}, { mode: 'offset', size: 10, page: 1 }, T0);
      expect(page.items.map((t) => t.fingerprint).sort()).toEqual(['fp-a', 'fp-b']);
    });

    it('createTenant with its first application and keys: all or nothing', async () => {
      const tenant = { id: 'tenant-c', name: 'C', createdAt: T0 };
      const application = makeApplication({ tenantId: tenant.id, type: 'management', permissions: [...ADMIN], rules: [] });
      const key = (purpose: 'data' | 'index', version = 1) => ({ tenantId: tenant.id, purpose, version, wrapped: new Uint8Array([1, 2, 3]), createdAt: T0 });
      // A key version given twice fails the last step: nothing of the tenant stays.
      await expect(store.createTenant(tenant, { application, key: makeApplicationKey(application), keys: [key('data'), key('index'), key('data')] })).rejects.toBeInstanceOf(
        InternalError,
      );
      expect(await store.getTenant(tenant.id)).toBeNull();
      expect(await store.getApplication(tenant.id, application.id)).toBeNull();
      expect(await store.listWrappedKeys(tenant.id, 'data')).toEqual([]);
      const first = makeApplicationKey(application);
      await store.createTenant(tenant, { application, key: first, keys: [key('data'), key('index')] });
      expect(await store.listApplicationKeys(tenant.id, application.id)).toEqual([first]);
      expect(await store.getTenant(tenant.id)).toEqual(tenant);
      expect(await store.getApplication(tenant.id, application.id)).toEqual(application);
      expect((await store.listWrappedKeys(tenant.id, 'index')).map((k) => k.version)).toEqual([1]);
      // An existing tenant id: 'exists', and the application given with it is not written.
      const again = makeApplication({ tenantId: tenant.id });
      expect(await store.createTenant(tenant, { application: again, key: makeApplicationKey(again), keys: [] })).toBe('exists');
      expect(await store.getApplication(tenant.id, again.id)).toBeNull();
    });
  });
}
