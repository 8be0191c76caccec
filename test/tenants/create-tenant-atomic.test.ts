import { expect, it } from 'vitest';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import type { Store } from '../../src/storage/store.js';
import { createVault } from '../../src/vault.js';
import { describeEachStore } from '../support/stores.js';

/**
 * A store whose separate application and key writes fail, as a crash or an outage between the
 * steps of a tenant's creation would.
 */
function failingBetweenSteps(store: Store): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'createApplication' || property === 'insertWrappedKey') return () => Promise.reject(new Error('connection lost'));
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Creating a tenant is atomic. */
describeEachStore('createTenant is atomic', (kind) => {
  it('never leaves a tenant without its administrator', async () => {
    const store = kind.create();
    const vault = await createVault({ store: failingBetweenSteps(store), masterKey: generateMasterKey(), sweepIntervalMs: 0 });
    try {
      const created = await vault.createTenant({ name: 'acme' }).catch(() => null);
      const tenants = await store.listTenants();
      for (const tenant of tenants) {
        const apps = await store.listApplications(tenant.id, { mode: 'offset', size: 10, page: 1 });
        expect(apps.items.map((app) => app.type)).toContain('management');
      }
      if (created !== null) {
        expect(tenants.map((t) => t.id)).toEqual([created.tenant.id]);
        // The keys were written with the tenant: the administrator's first token needs no further key write.
        expect(await store.listWrappedKeys(created.tenant.id, 'data')).toHaveLength(1);
        expect(await store.listWrappedKeys(created.tenant.id, 'index')).toHaveLength(1);
      }
    } finally {
      await vault.close();
      await kind.cleanup(store);
    }
  });
});
