import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ProxyRecord, Store } from '../storage/store.js';
import { APP_A, T0, TENANT_A, TENANT_B, cursor, offset } from './store-fixtures.js';

/** A proxy record of TENANT_A with the given fields. */
export function makeProxy(overrides: Partial<ProxyRecord> = {}): ProxyRecord {
  const keyHash = randomUUID().replace(/-/g, '').padEnd(64, '0');
  return {
    id: randomUUID(),
    tenantId: TENANT_A,
    name: 'Stripe charges',
    destinationUrl: 'https://api.stripe.com/v1/',
    requestTransforms: [{ type: 'code', code: 'module.exports = async (req) => ({ body: req.args })' }],
    responseTransforms: [],
    configuration: new Uint8Array([1, 2, 3]),
    applicationId: null,
    boundGrants: null,
    requireAuth: true,
    keyHash,
    keyLookup: keyHash.slice(0, 16),
    maker: null,
    createdBy: APP_A,
    createdAt: T0,
    modifiedBy: null,
    modifiedAt: null,
    ...overrides,
  };
}

/** Registers the Store conformance tests of pre-configured proxies (see runStoreConformance). */
export function proxyConformance(current: () => Store): void {
  let store: Store;
  beforeEach(() => {
    store = current();
  });

  describe('proxies', () => {
    it("creates and gets a proxy as it was given (sealed configuration bytes, transforms, flags); a taken id answers 'exists'", async () => {
      const proxy = makeProxy({
        applicationId: APP_A,
        boundGrants: { permissions: ['token:create'], rules: [] },
        requireAuth: false,
        responseTransforms: [{ type: 'mask', matcher: 'regex', expression: '(\\d+)', replacement: '*' }],
      });
      expect(await store.createProxy(proxy)).toBe('created');
      expect(await store.getProxy(TENANT_A, proxy.id)).toEqual(proxy);
      expect(await store.createProxy({ ...proxy, name: 'again' })).toBe('exists');
      expect((await store.getProxy(TENANT_A, proxy.id))?.name).toBe(proxy.name);
      const bare = makeProxy({ configuration: null, requestTransforms: [] });
      await store.createProxy(bare);
      expect(await store.getProxy(TENANT_A, bare.id)).toEqual(bare);
    });

    it('is scoped by tenant: never read, listed, changed or removed through another tenant', async () => {
      const b = makeProxy({ tenantId: TENANT_B });
      await store.createProxy(b);
      expect(await store.getProxy(TENANT_A, b.id)).toBeNull();
      expect(await store.updateProxy(TENANT_A, b.id, { name: 'hijacked', modifiedBy: APP_A, modifiedAt: T0 })).toEqual({ status: 'not_found' });
      expect(await store.updateProxy(TENANT_A, b.id, { name: 'hijacked', modifiedBy: APP_A, modifiedAt: T0 }, { applicationId: null })).toEqual({ status: 'not_found' });
      expect(await store.deleteProxy(TENANT_A, b.id)).toBe(false);
      expect((await store.listProxies(TENANT_A, {}, cursor(10))).items).toEqual([]);
      expect(await store.getProxy(TENANT_B, b.id)).toEqual(b);
    });

    it('finds proxies by key lookup across tenants (the caller compares the hash)', async () => {
      const a = makeProxy({ keyHash: 'abcdabcdabcdabcd'.padEnd(64, '1'), keyLookup: 'abcdabcdabcdabcd' });
      const b = makeProxy({ tenantId: TENANT_B, keyHash: 'abcdabcdabcdabcd'.padEnd(64, '2'), keyLookup: 'abcdabcdabcdabcd' });
      await store.createProxy(a);
      await store.createProxy(b);
      await store.createProxy(makeProxy());
      const found = await store.findProxiesByKeyLookup('abcdabcdabcdabcd');
      expect(found.sort((x, y) => x.keyHash.localeCompare(y.keyHash))).toEqual([a, b]);
      expect(await store.findProxiesByKeyLookup('ffffffffffffffff')).toEqual([]);
    });

    it('updates only the fields given, rotates the key, and keeps a precondition on the binding', async () => {
      const proxy = makeProxy({ applicationId: APP_A });
      await store.createProxy(proxy);
      const renamed = await store.updateProxy(TENANT_A, proxy.id, { name: 'Renamed', requireAuth: false, configuration: null, modifiedBy: APP_A, modifiedAt: T0 + 5 });
      expect(renamed).toEqual({ status: 'updated', record: { ...proxy, name: 'Renamed', requireAuth: false, configuration: null, modifiedBy: APP_A, modifiedAt: T0 + 5 } });
      const key = { keyHash: 'e'.repeat(64), keyLookup: 'e'.repeat(16) };
      const rotated = await store.updateProxy(TENANT_A, proxy.id, {
        key,
        responseTransforms: [{ type: 'append_header', key: 'x', value: 'y' }],
        modifiedBy: null,
        modifiedAt: T0 + 6,
      });
      expect(rotated.status === 'updated' && rotated.record).toMatchObject({ ...key, name: 'Renamed', responseTransforms: [{ type: 'append_header', key: 'x', value: 'y' }] });
      expect(await store.findProxiesByKeyLookup(proxy.keyLookup)).toEqual([]);
      expect((await store.findProxiesByKeyLookup(key.keyLookup)).map((p) => p.id)).toEqual([proxy.id]);
      expect(await store.updateProxy(TENANT_A, proxy.id, { name: 'raced', modifiedBy: null, modifiedAt: T0 + 7 }, { applicationId: null })).toEqual({ status: 'changed' });
      expect((await store.getProxy(TENANT_A, proxy.id))?.name).toBe('Renamed');
      const rebound = await store.updateProxy(TENANT_A, proxy.id, { applicationId: null, boundGrants: null, modifiedBy: null, modifiedAt: T0 + 8 }, { applicationId: APP_A });
      expect(rebound.status === 'updated' && rebound.record.applicationId).toBeNull();
      expect(await store.updateProxy(TENANT_A, 'no-such-proxy', { name: 'x', modifiedBy: null, modifiedAt: T0 })).toEqual({ status: 'not_found' });
    });

    it('lists in creation order with both paging modes, filtered by a case-insensitive name pattern', async () => {
      const proxies = ['Stripe live', 'Adyen', 'stripe TEST'].map((name, i) => makeProxy({ name, createdAt: T0 + i }));
      for (const p of proxies) await store.createProxy(p);
      const first = await store.listProxies(TENANT_A, {}, cursor(2));
      expect(first.items.map((p) => p.name)).toEqual(['Stripe live', 'Adyen']);
      const next = first.mode === 'cursor' ? first.next : null;
      expect(next).not.toBeNull();
      expect((await store.listProxies(TENANT_A, {}, cursor(2, next!))).items.map((p) => p.name)).toEqual(['stripe TEST']);
      expect(await store.listProxies(TENANT_A, { name: 'STRIPE' }, offset(10, 1))).toMatchObject({ totalItems: 2, items: [{ name: 'Stripe live' }, { name: 'stripe TEST' }] });
      expect((await store.listProxies(TENANT_A, { name: 's*e t' }, cursor(10))).items.map((p) => p.name)).toEqual(['stripe TEST']);
      expect((await store.listProxies(TENANT_A, { name: '%' }, cursor(10))).items).toEqual([]);
    });

    it('keeps the maker a proxy answers to as given, and changes it only when told (null is an administrator)', async () => {
      const proxy = makeProxy({ maker: { applicationId: APP_A, credentialsGeneration: 3 } });
      await store.createProxy(proxy);
      expect((await store.getProxy(TENANT_A, proxy.id))?.maker).toEqual({ applicationId: APP_A, credentialsGeneration: 3 });
      const renamed = await store.updateProxy(TENANT_A, proxy.id, { name: 'Renamed', modifiedBy: APP_A, modifiedAt: T0 + 1 });
      expect(renamed.status === 'updated' && renamed.record.maker).toEqual({ applicationId: APP_A, credentialsGeneration: 3 });
      const confirmed = await store.updateProxy(TENANT_A, proxy.id, { maker: { applicationId: APP_A, credentialsGeneration: 4 }, modifiedBy: null, modifiedAt: T0 + 2 });
      expect(confirmed.status === 'updated' && confirmed.record.maker).toEqual({ applicationId: APP_A, credentialsGeneration: 4 });
      expect((await store.findProxiesByKeyLookup(proxy.keyLookup))[0]?.maker).toEqual({ applicationId: APP_A, credentialsGeneration: 4 });
      const cleared = await store.updateProxy(TENANT_A, proxy.id, { maker: null, modifiedBy: null, modifiedAt: T0 + 3 });
      expect(cleared.status === 'updated' && cleared.record.maker).toBeNull();
      expect((await store.listProxies(TENANT_A, {}, cursor(10))).items.map((p) => p.maker)).toEqual([null]);
    });

    it('deletes a proxy once', async () => {
      const proxy = makeProxy();
      await store.createProxy(proxy);
      expect(await store.deleteProxy(TENANT_A, proxy.id)).toBe(true);
      expect(await store.deleteProxy(TENANT_A, proxy.id)).toBe(false);
      expect(await store.getProxy(TENANT_A, proxy.id)).toBeNull();
      expect(await store.findProxiesByKeyLookup(proxy.keyLookup)).toEqual([]);
    });
  });
}
