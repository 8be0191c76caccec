import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runJobConformance } from './job-conformance.js';
import { credentialsConformance } from './credentials-conformance.js';
import { describeWebhookStore } from './webhook-store-conformance.js';
import { tokenWriteConformance } from './store-conformance-token-writes.js';
import { tokenLifecycleConformance } from './store-conformance-token-lifecycle.js';
import { tokenReadConformance } from './store-conformance-token-reads.js';
import { recordConformance } from './store-conformance-records.js';
import { idempotencyConformance } from './store-conformance-idempotency.js';
import { authorityConformance } from './store-conformance-authority.js';
import { proxyConformance } from './store-conformance-proxies.js';
import { tokenIntentConformance } from './store-conformance-token-intents.js';
import { reactorRequestConformance } from './store-conformance-reactor-requests.js';
import type { Store } from '../storage/store.js';
import { T0, TENANT_A, TENANT_B, hex, makeToken, tokenHelpers } from './store-fixtures.js';

export * from './store-fixtures.js';

/*
 * The Store conformance suite: every guarantee stated in src/storage/store.ts, run against any
 * implementation through the Store interface only. A store is correct when this suite passes.
 */

/**
 * Registers the Store conformance suite with vitest.
 * @param name Shown in the suite title.
 * @param factory Returns a fresh, empty store (migrated or not: the suite calls `migrate()`).
 * @param cleanup Runs after each test instead of `store.close()` (e.g. to close and delete a file).
 * @example
 * runStoreConformance('sqlite :memory:', () => createSqliteStore());
 */
export function runStoreConformance(name: string, factory: () => Store | Promise<Store>, cleanup?: (store: Store) => void | Promise<void>): void {
  runJobConformance(name, factory, cleanup);
  describe(`Store conformance: ${name}`, () => {
    let store: Store;

    beforeEach(async () => {
      store = await factory();
      await store.migrate();
      await store.createTenant({ id: TENANT_A, name: 'Tenant A', createdAt: T0 });
      await store.createTenant({ id: TENANT_B, name: 'Tenant B', createdAt: T0 + 1 });
    });

    afterEach(async () => {
      if (cleanup) await cleanup(store);
      else await store.close();
    });

    credentialsConformance(() => store);
    tokenWriteConformance(() => store);
    tokenLifecycleConformance(() => store);
    tokenReadConformance(() => store);
    recordConformance(() => store);
    idempotencyConformance(() => store);
    authorityConformance(() => store);
    proxyConformance(() => store);
    tokenIntentConformance(() => store);
    reactorRequestConformance(() => store);
    const { create, createAll, remove, listIds, auditOf } = tokenHelpers(() => store);

    describe('migrations and tenants', () => {
      it('migrate() is idempotent and keeps data', async () => {
        const token = makeToken();
        await createAll([token]);
        const again = await store.migrate();
        // Answers what it applied: nothing, on a schema already migrated (the suite migrated it).
        expect(again.applied).toEqual([]);
        expect(again.version).toBeGreaterThan(0);
        expect(await store.migrate()).toEqual(again);
        expect(await store.getToken(TENANT_A, token.id, T0)).not.toBeNull();
      });

      it('creates, gets and lists tenants; an unknown tenant is null', async () => {
        expect(await store.getTenant(TENANT_A)).toEqual({ id: TENANT_A, name: 'Tenant A', createdAt: T0 });
        expect(await store.getTenant('no-such-tenant')).toBeNull();
        expect((await store.listTenants()).map((t) => t.id)).toEqual([TENANT_A, TENANT_B]);
      });

      it("answers 'exists' for a second tenant with the same id, and writes nothing", async () => {
        expect(await store.createTenant({ id: TENANT_A, name: 'again', createdAt: T0 })).toBe('exists');
        expect((await store.getTenant(TENANT_A))?.name).toBe('Tenant A');
      });
    });

    describe('wrapped keys', () => {
      const key = (overrides: Partial<{ tenantId: string; purpose: 'data' | 'index'; version: number; wrapped: Uint8Array }>) => ({
        tenantId: TENANT_A,
        purpose: 'data' as const,
        version: 1,
        wrapped: new Uint8Array([1, 2, 3]),
        createdAt: T0,
        ...overrides,
      });

      it('inserts once per (tenant, purpose, version): the first writer wins, the second gets false', async () => {
        expect(await store.insertWrappedKey(key({ wrapped: new Uint8Array([1]) }))).toBe(true);
        expect(await store.insertWrappedKey(key({ wrapped: new Uint8Array([2]) }))).toBe(false);
        const keys = await store.listWrappedKeys(TENANT_A, 'data');
        expect(keys).toHaveLength(1);
        expect(hex(keys[0]!.wrapped)).toBe('01');
      });

      it('lists by tenant and purpose, ascending by version', async () => {
        await store.insertWrappedKey(key({ version: 3, wrapped: Buffer.from([3]) }));
        await store.insertWrappedKey(key({ version: 1, wrapped: new Uint8Array([1]) }));
        await store.insertWrappedKey(key({ version: 2, wrapped: new Uint8Array([2]) }));
        await store.insertWrappedKey(key({ purpose: 'index', version: 1, wrapped: new Uint8Array([9]) }));
        await store.insertWrappedKey(key({ tenantId: TENANT_B, version: 1, wrapped: new Uint8Array([7]) }));
        const data = await store.listWrappedKeys(TENANT_A, 'data');
        expect(data.map((k) => [k.version, hex(k.wrapped), k.purpose, k.tenantId, k.createdAt])).toEqual([
          [1, '01', 'data', TENANT_A, T0],
          [2, '02', 'data', TENANT_A, T0],
          [3, '03', 'data', TENANT_A, T0],
        ]);
        expect((await store.listWrappedKeys(TENANT_A, 'index')).map((k) => hex(k.wrapped))).toEqual(['09']);
        expect((await store.listWrappedKeys(TENANT_B, 'data')).map((k) => hex(k.wrapped))).toEqual(['07']);
        expect(await store.listWrappedKeys(TENANT_B, 'index')).toEqual([]);
      });

      it('lets exactly one of many concurrent writers of a version win', async () => {
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => Promise.resolve().then(() => store.insertWrappedKey(key({ version: 5, wrapped: new Uint8Array([i]) })))),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await store.listWrappedKeys(TENANT_A, 'data')).toHaveLength(1);
      });
    });

    describeWebhookStore(() => store);

    describe('races', () => {
      it('many concurrent creates with one id: exactly one created, the rest id_conflict', async () => {
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => Promise.resolve().then(() => create(makeToken({ id: 'contested', ciphertext: new Uint8Array([i]) })))),
        );
        expect(results.filter((r) => r.status === 'created')).toHaveLength(1);
        expect(results.filter((r) => r.status === 'id_conflict')).toHaveLength(19);
        expect(await listIds({ ids: ['contested'] })).toEqual(['contested']);
        expect(await auditOf(TENANT_A, 'contested')).toEqual([]);
      });

      it('many concurrent deduplicating creates with one fingerprint: exactly one created, the rest duplicates of it', async () => {
        const tokens = Array.from({ length: 20 }, () => makeToken({ fingerprint: 'contested-fp', type: 'card', deduplicate: true }));
        const results = await Promise.all(tokens.map((token) => Promise.resolve().then(() => create(token))));
        const created = tokens.filter((_, i) => results[i]!.status === 'created');
        expect(created).toHaveLength(1);
        for (const result of results) {
          if (result.status === 'duplicate') expect(result.existing.id).toBe(created[0]!.id);
          else expect(result.status).toBe('created');
        }
        expect(await listIds({ fingerprints: ['contested-fp'] })).toEqual([created[0]!.id]);
      });

      it('many concurrent deletes of one token: exactly one true, one reference record', async () => {
        const token = makeToken();
        await createAll([token]);
        const results = await Promise.all(Array.from({ length: 10 }, () => Promise.resolve().then(() => remove(TENANT_A, token.id))));
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await store.getDeletedToken(TENANT_A, token.id)).not.toBeNull();
        expect((await auditOf(TENANT_A, token.id)).filter((e) => e.operation === 'token:delete')).toHaveLength(1);
      });
    });
  });
}
