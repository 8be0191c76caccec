/** vault.createFirstTenant: what `tokenvault serve` does on a fresh database, through the vault's API. */
import { expect, it } from 'vitest';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { createPostgresStore } from '../../src/postgres.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { openOperator } from '../../src/operator/operator.js';
import { dropSchema, freshSchema } from '../support/postgres.js';
import { describeEachPgRoute, describeEachSharedStore } from '../support/stores.js';

describeEachSharedStore('vault.createFirstTenant', ({ url }) => {
  it('creates the tenant and its administrator on an empty database only; later calls answer null', async () => {
    const schema = freshSchema('first');
    const store = url === undefined ? createSqliteStore() : createPostgresStore({ connectionString: url, schema });
    const operator = await openOperator({ store, masterKey: generateMasterKey(), jobs: { start: false } });
    const { vault } = operator;
    try {
      const first = await vault.createFirstTenant({ name: 'default', applicationName: 'Administrator' });
      expect(first?.tenant.name).toBe('default');
      expect((await vault.authenticate(first!.application.key)).applicationType).toBe('management');
      expect(await vault.createFirstTenant({ name: 'again' })).toBeNull();
      expect((await operator.listTenants()).map((t) => t.name)).toEqual(['default']);
      // The recurring sweep is queued one interval ahead: nothing is due yet.
      expect(await vault.worker.depth()).toBe(0);
    } finally {
      await vault.close();
      if (url !== undefined) await dropSchema(schema);
    }
  });
});

describeEachPgRoute('vault.createFirstTenant on one PostgreSQL database shared by instances', (url) => {
  it('instances starting together create one tenant between them (the store’s withLock)', async () => {
    const schema = freshSchema('first_race');
    const masterKey = generateMasterKey();
    const operators = await Promise.all(
      Array.from({ length: 4 }, () => openOperator({ store: createPostgresStore({ connectionString: url, schema, max: 2 }), masterKey, jobs: { start: false } })),
    );
    const vaults = operators.map((operator) => operator.vault);
    try {
      const results = await Promise.all(vaults.map((vault) => vault.createFirstTenant({ name: 'default' })));
      expect(results.filter((r) => r !== null)).toHaveLength(1);
      expect(await operators[0]!.listTenants()).toHaveLength(1);
    } finally {
      for (const vault of vaults) await vault.close();
      await dropSchema(schema);
    }
  });
});
