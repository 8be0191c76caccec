import { afterAll, beforeAll, expect, it } from 'vitest';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { ensureBuilt } from '../support/ensure-built.js';
import { adminPool, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';
import { describeEachPgRoute } from '../support/stores.js';
import { ADMIN_KEY, api, runCliProcess, startCli, type Running } from './helpers.js';

const env = { TOKENVAULT_MASTER_KEY: generateMasterKey(), TOKENVAULT_ADMIN_KEY: ADMIN_KEY };
const schemas: string[] = [];

afterAll(async () => {
  if (schemas.length === 0) return;
  for (const schema of schemas) await dropSchema(schema);
  await endAdmin();
});

const stop = async (cli: Running) => {
  if (cli.child.exitCode !== null) return cli.exited;
  cli.child.kill('SIGTERM');
  return cli.exited;
};

// Directly and through PgBouncer in transaction mode (docs/scaling.md), when one is set.
describeEachPgRoute('tokenvault serve --postgres (the built CLI as child processes)', (url, route) => {
  beforeAll(() => ensureBuilt(), 120_000);
  it('two instances share one database: one bootstrap, token round trips over HTTP, migrate and keys rotate', async () => {
    const schema = freshSchema('cli');
    schemas.push(schema);
    const store = ['--postgres', url, '--postgres-schema', schema];
    // Directly, the second does not name its statements (through the pooler both start naming them
    // and stop at the first statement it loses).
    const prepared = route === 'postgres' ? ['--postgres-prepared-statements', 'off'] : [];
    // Started together on an empty schema: they race to migrate and to create the first tenant.
    const instances = await Promise.all([startCli(['serve', '--port', '0', ...store], env), startCli(['serve', '--port', '0', ...store, ...prepared], env)]);
    const [one, two] = instances;
    try {
      expect(instances.filter((cli) => /created tenant/.test(cli.stdout()))).toHaveLength(1);
      expect((await adminPool().query(`SELECT count(*)::int AS n FROM "${schema}".tenants`)).rows[0].n).toBe(1);
      for (const cli of instances) expect(cli.stdout() + cli.stderr()).not.toContain(env.TOKENVAULT_MASTER_KEY);

      const app = await api(one!.url, ADMIN_KEY, 'POST', '/applications', {
        name: 'checkout',
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:update'],
        rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update'] }],
      });
      expect(app.status).toBe(201);
      const key = app.body.key as string;
      const created = await api(one!.url, key, 'POST', '/tokens', { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 } });
      expect(created.status).toBe(201);
      // The other instance reads it: the application and the token are in the shared database.
      const got = await api(two!.url, key, 'GET', `/tokens/${created.body.id}`);
      expect(got.status).toBe(200);
      expect(got.body.data.number).toBe('4242424242424242');
      const listed = await api(two!.url, key, 'GET', '/tokens?type=card');
      expect(listed.body.data.map((t: { id: string }) => t.id)).toEqual([created.body.id]);

      expect(await Promise.all(instances.map(stop))).toEqual([0, 0]);
    } finally {
      for (const cli of instances) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }

    // The operator commands take the flag too (behind PgBouncer 1.18 as docs/scaling.md runs them).
    const operatorStore = route === 'pgbouncer' ? [...store, '--postgres-prepared-statements', 'off'] : store;
    const migrated = await runCliProcess(['migrate', ...operatorStore]);
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toMatch(/schema already at version \d+, nothing to apply/);
    const rotated = await runCliProcess(['keys', 'rotate', ...operatorStore], env);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toMatch(/data key version 2, 1 tokens re-encrypted/);

    const wrongKey = await runCliProcess(['keys', 'rotate', ...store], { TOKENVAULT_MASTER_KEY: generateMasterKey() });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/master key does not match .*check TOKENVAULT_MASTER_KEY\)/);
  });
});
