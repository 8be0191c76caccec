import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestVault } from '../../src/testing/index.js';
import { startPool } from './pg-schema-pool-setup.js';
import { pooledPostgresStore, releaseSchema, type SchemaPoolContext } from './pg-schema-pool.js';
import { adminPool, freshSchema } from './postgres.js';
import { describePostgres } from './stores.js';
import { SUITE_START } from './suite-start.js';

// The pool hands one test's schema to the next: these tests check that what the next test gets is,
// through the catalog and the data, a schema fresh from the migrations. A private pool, so that the
// suite's other files (taking from the run's pool at the same time) cannot take these schemas.
describePostgres('the pool of migrated PostgreSQL schemas', (url) => {
  let pool: SchemaPoolContext;
  const pooled = async (): Promise<string[]> =>
    (await adminPool().query<{ nspname: string }>('SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)', [pool.prefix])).rows.map((row) => row.nspname);
  const exists = async (schema: string): Promise<boolean> => (await adminPool().query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rows.length > 0;
  const store = () => pooledPostgresStore({ connectionString: url, schema: freshSchema('pooltest'), max: 2 }, pool);

  beforeAll(async () => {
    pool = await startPool(url, `tv_pool_${process.pid}_t${randomBytes(3).toString('hex')}_`);
  });
  afterAll(async () => {
    for (const schema of await pooled()) await adminPool().query(`DROP SCHEMA "${schema}" CASCADE`);
  });

  it('hands a used schema to the next store emptied, its sequences restarted and its functions on its new name', async () => {
    const first = store();
    const vault = await createTestVault({ start: SUITE_START, store: first });
    expect(await pooled()).toEqual([]);
    const app = await vault.caller({ permissions: ['token:create'] });
    await vault.tokens.create(app, { type: 'token', data: 'in the first test' });
    await vault.close();
    await releaseSchema(first.schema, pool);
    expect(await exists(first.schema)).toBe(false);
    expect(await pooled()).toHaveLength(1);

    const second = store();
    expect((await second.migrate()).applied).toEqual([]);
    expect(await pooled()).toEqual([]);
    const s = `"${second.schema}"`;
    const tables = (await adminPool().query<{ tablename: string }>('SELECT tablename FROM pg_tables WHERE schemaname = $1', [second.schema])).rows;
    for (const { tablename } of tables) {
      const { rows } = await adminPool().query<{ n: string }>(`SELECT count(*) AS n FROM ${s}."${tablename}"`);
      expect([tablename, Number(rows[0]!.n)]).toEqual([tablename, tablename === 'tokenvault_migrations' ? Number(pool.versions.split(',').length) : 0]);
    }
    const configs = (
      await adminPool().query<{ c: string[] }>(`SELECT proconfig AS c FROM pg_proc WHERE pronamespace = $1::regnamespace AND proconfig IS NOT NULL`, [second.schema])
    ).rows;
    expect(configs.length).toBeGreaterThan(0);
    for (const { c } of configs) expect(c).toEqual([`search_path=${second.schema}`]);

    const again = await createTestVault({ start: SUITE_START, store: second });
    await again.caller({ permissions: ['token:create'] });
    // The first row of a restarted identity; and a trigger that runs on the schema's search path
    // (an application's keys go with it) finds its tables under the new name.
    expect((await adminPool().query(`SELECT min(seq)::int AS seq FROM ${s}.applications`)).rows[0]).toEqual({ seq: 1 });
    await adminPool().query(`DELETE FROM ${s}.applications`);
    expect((await adminPool().query(`SELECT count(*)::int AS n FROM ${s}.application_keys`)).rows[0]).toEqual({ n: 0 });
    await again.close();
    await releaseSchema(second.schema, pool);
    expect(await pooled()).toHaveLength(1);
  });

  it('drops, rather than pools, a schema whose definitions or recorded migrations a test changed', async () => {
    const changes = [
      'ALTER TABLE $s.tokens ADD COLUMN extra text',
      'DROP INDEX $s.sessions_expires_at',
      'ALTER TABLE $s.audit_log DISABLE TRIGGER audit_log_guard',
      'GRANT USAGE ON SCHEMA $s TO PUBLIC',
      'CREATE TABLE $s.extra (x int)',
      'DELETE FROM $s.tokenvault_migrations WHERE version = 1',
    ];
    for (const change of changes) {
      const changed = store();
      await changed.migrate();
      await changed.close();
      await adminPool().query(change.replaceAll('$s', `"${changed.schema}"`));
      await releaseSchema(changed.schema, pool);
      expect([change, await exists(changed.schema), await pooled()]).toEqual([change, false, []]);
    }
    // An unchanged one still goes back.
    const unchanged = store();
    await unchanged.migrate();
    await unchanged.close();
    await releaseSchema(unchanged.schema, pool);
    expect(await pooled()).toHaveLength(1);
  });
});
