/**
 * Migrated PostgreSQL schemas, reused from test to test: making a schema with the whole migration
 * chain and dropping it afterwards took about a second of PostgreSQL's catalog work per test (0.8 s
 * to migrate, 0.2 s to drop, measured on the 2-core machine under a suite run), while emptying a
 * used one and renaming it takes some 30 ms (docs/testing.md, "How long it takes").
 *
 * How a test's store gets its schema: `pooledPostgresStore` names a fresh schema, as before, and
 * before its first `migrate()` renames a schema waiting in the pool to that name; with none
 * waiting, `migrate()` creates it with the real migration chain (so the pool grows to the number of
 * stores open at once, and a run without the pool works as before). Once migrated, the schema's
 * catalog row is dated (`recordSchemaBase`). After the test, `releaseSchema` checks that no
 * definition in the schema was written since, that none is missing (pg-schema-state.ts, against a
 * fresh schema's shape taken once per run by global-setup.ts) and that its recorded migrations are
 * the chain's: then it empties every table, restarts its sequences and puts it back in the pool.
 * Anything else (a test that altered, granted, disabled or dropped something) and the schema is
 * dropped. A schema from the pool is thus, through its catalog and its data, a fresh one.
 *
 * The pool is one per run: schemas named `tv_pool_<pid of the run>_…`, claimed under an advisory
 * lock (a run's test files take from the same pool), and dropped by the global teardown.
 * Tests of the migrations themselves open their stores on `freshSchema()` directly.
 */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../../src/postgres.js';
import type { PostgresStoreOptions } from '../../src/storage/postgres/postgres-options.js';
import { SCHEMA_BASE_SQL, SCHEMA_STATE_SQL } from './pg-schema-state.js';
import { adminPool, dropSchema } from './postgres.js';

/** What global-setup.ts provides when PostgreSQL runs: the pool's name prefix and a fresh schema's shape. */
export interface SchemaPoolContext {
  prefix: string;
  /** `shape` of SCHEMA_STATE_SQL for a schema fresh from the migrations. */
  shape: string;
  /** The versions a fresh schema records, comma-separated. */
  versions: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgSchemaPool: SchemaPoolContext | null;
  }
}

/** Advisory lock class of the pool's claims (beside the migrations' 0x74760001). */
const CLAIM_LOCK_CLASS = 0x74760f01;

const NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function checked(name: string): string {
  if (!NAME.test(name)) throw new Error(`not a schema name the pool makes: ${name}`);
  return name;
}

/** The run's pool in a test file; `null` without PostgreSQL or outside the suite's config. */
export function runPool(): SchemaPoolContext | null {
  try {
    return inject('pgSchemaPool') ?? null;
  } catch {
    return null;
  }
}

/** The name of a schema going back to the pool. */
export function poolName(prefix: string): string {
  return `${prefix}${randomBytes(6).toString('hex')}`;
}

/**
 * Re-points the functions that run with the schema as their search path (`SET search_path FROM
 * CURRENT` in the migrations) at the schema's new name, as a fresh migration would have set them.
 */
const repointFunctions = (schema: string) => `
  FOR f IN SELECT p.oid::regprocedure AS sig FROM pg_proc p
    WHERE p.pronamespace = '${schema}'::regnamespace AND EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search\\_path=%')
  LOOP
    EXECUTE format('ALTER FUNCTION %s SET search_path TO %I', f.sig, '${schema}');
  END LOOP;`;

/**
 * Renames a schema waiting in the pool to `schema`; does nothing when `schema` exists already (the
 * second instance of a pair) or the pool is empty (`migrate()` then creates the schema).
 */
export async function adoptPooledSchema(schema: string, pool = runPool()): Promise<void> {
  if (pool === null) return;
  const target = checked(schema);
  const prefix = checked(pool.prefix);
  await adminPool().query(`DO $$
DECLARE pooled text; f record;
BEGIN
  PERFORM pg_advisory_xact_lock(${CLAIM_LOCK_CLASS}, hashtext('${prefix}'));
  IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = '${target}') THEN RETURN; END IF;
  SELECT nspname INTO pooled FROM pg_namespace WHERE starts_with(nspname, '${prefix}') ORDER BY nspname LIMIT 1;
  IF pooled IS NULL THEN RETURN; END IF;
  EXECUTE format('ALTER SCHEMA %I RENAME TO %I', pooled, '${target}');
  ${repointFunctions(target)}
END $$`);
}

/** Per schema of this process: the transaction after which a write to its definitions is a test's change. */
const bases = new Map<string, string>();

/** Dates the schema's definitions once it is migrated (its pool claim or its migration), unless dated already. */
export async function recordSchemaBase(schema: string, pool = runPool()): Promise<void> {
  if (pool === null || bases.has(schema)) return;
  const base = (await adminPool().query<{ base: string }>(SCHEMA_BASE_SQL, [schema])).rows[0]?.base;
  if (base !== undefined) bases.set(schema, base);
}

/**
 * After the test, its store closed: empties the schema and returns it to the pool when its
 * definitions are still a fresh schema's, drops it otherwise. Without the pool: drops it, as before.
 */
export async function releaseSchema(schema: string, pool = runPool()): Promise<void> {
  const base = bases.get(schema);
  bases.delete(schema);
  if (pool === null || base === undefined) return dropSchema(schema);
  const name = checked(schema);
  const back = poolName(checked(pool.prefix));
  const client = await adminPool().connect();
  let reusable = false;
  try {
    await client.query('BEGIN');
    const state = (await client.query<{ shape: string; changed: boolean }>(SCHEMA_STATE_SQL, [name, base])).rows[0];
    if (state !== undefined && !state.changed && state.shape === pool.shape) {
      // One round trip; the versions check raises (and the schema is dropped) on any difference.
      // audit_log refuses deletion unless retention's setting is on (the migrations' guard).
      await client.query(`SET LOCAL synchronous_commit = off; SET LOCAL tokenvault.audit_prune = 'on'; DO $$
DECLARE t record; f record;
BEGIN
  IF (SELECT string_agg(version::text, ',' ORDER BY version) FROM "${name}".tokenvault_migrations) IS DISTINCT FROM '${pool.versions}' THEN
    RAISE EXCEPTION 'migrations differ';
  END IF;
  FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = '${name}' AND tablename <> 'tokenvault_migrations' LOOP
    EXECUTE format('DELETE FROM %I.%I', '${name}', t.tablename);
  END LOOP;
  PERFORM setval(s.seqrelid, s.seqstart, false) FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
    WHERE c.relnamespace = '${name}'::regnamespace;
  EXECUTE format('ALTER SCHEMA %I RENAME TO %I', '${name}', '${back}');
  ${repointFunctions(back)}
END $$`);
      await client.query('COMMIT');
      reusable = true;
    } else await client.query('ROLLBACK');
  } catch {
    await client.query('ROLLBACK').catch(() => undefined);
  } finally {
    client.release();
  }
  if (!reusable) await dropSchema(name);
}

/**
 * A PostgreSQL store on `options.schema` whose first `migrate()` takes a migrated schema from the
 * pool (renamed to that name) when one is waiting. Release its schema with `releaseSchema`.
 */
export function pooledPostgresStore(options: PostgresStoreOptions & { schema: string }, pool = runPool()): PostgresStore {
  const store = createPostgresStore(options);
  const migrate = store.migrate;
  let adopted: Promise<void> | undefined;
  return Object.assign(store, {
    migrate: async () => {
      adopted ??= adoptPooledSchema(options.schema, pool);
      await adopted;
      const outcome = await migrate();
      await recordSchemaBase(options.schema, pool);
      return outcome;
    },
  });
}
