/**
 * The run's side of the schema pool (pg-schema-pool.ts), called from global-setup.ts: migrates one
 * schema with the real chain, takes its shape (pg-schema-state.ts) as the pool's reference and leaves it in the pool;
 * afterwards drops the pool. Also drops the pools that runs which no longer exist left behind (a run
 * killed before its teardown).
 */
import { createPostgresStore } from '../../src/postgres.js';
import { SCHEMA_BASE_SQL, SCHEMA_STATE_SQL } from './pg-schema-state.js';
import { poolName, type SchemaPoolContext } from './pg-schema-pool.js';
import { PG_URL, adminPool, endAdmin, freshSchema } from './postgres.js';

const POOLS = /^tv_pool_(\d+)_/;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function dropPools(which: (pid: number) => boolean): Promise<void> {
  const { rows } = await adminPool().query<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'tv\\_pool\\_%'`);
  for (const { nspname } of rows) {
    const pid = Number(POOLS.exec(nspname)?.[1]);
    if (Number.isInteger(pid) && which(pid)) await adminPool().query(`DROP SCHEMA IF EXISTS "${nspname}" CASCADE`);
  }
}

/**
 * A pool named by `prefix`: one schema migrated with the real chain, whose shape and versions are
 * the reference, left in the pool under a pool name (the first store to ask takes it; its
 * functions are re-pointed when it is claimed, as for any pooled schema).
 */
export async function startPool(url: string, prefix: string): Promise<SchemaPoolContext> {
  const reference = freshSchema('reference');
  const store = createPostgresStore({ connectionString: url, schema: reference, max: 2 });
  try {
    await store.migrate();
  } finally {
    await store.close();
  }
  const admin = adminPool();
  const base = (await admin.query<{ base: string }>(SCHEMA_BASE_SQL, [reference])).rows[0]!.base;
  const state = (await admin.query<{ shape: string; changed: boolean }>(SCHEMA_STATE_SQL, [reference, base])).rows[0]!;
  const versions = (await admin.query<{ v: string }>(`SELECT string_agg(version::text, ',' ORDER BY version) AS v FROM "${reference}".tokenvault_migrations`)).rows[0]!.v;
  await admin.query(`ALTER SCHEMA "${reference}" RENAME TO "${poolName(prefix)}"`);
  return { prefix, shape: state.shape, versions };
}

/**
 * Starts the run's pool; `null` when PostgreSQL does not run, or with TOKENVAULT_TEST_PG_POOL=0 (every
 * test then migrates and drops its own schema: to compare, or to rule the pool out). The teardown it
 * answers drops the pool.
 */
export async function startSchemaPool(): Promise<{ context: SchemaPoolContext | null; teardown: () => Promise<void> }> {
  if (PG_URL === undefined || process.env.TOKENVAULT_TEST_PG_POOL === '0') return { context: null, teardown: async () => undefined };
  const prefix = `tv_pool_${process.pid}_`;
  await dropPools((pid) => pid !== process.pid && !alive(pid));
  const context = await startPool(PG_URL, prefix);
  await endAdmin();
  return {
    context,
    teardown: async () => {
      await dropPools((pid) => pid === process.pid);
      await endAdmin();
    },
  };
}
