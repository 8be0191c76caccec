/**
 * Every statement the PostgreSQL store sends for a tenant's data names the tenant (docs/scaling.md,
 * "Scaling out"): the store conformance suite runs on a pool that records each statement, and each
 * one either mentions tenant_id or is one of the named exceptions below.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PgPool, type PgPoolClient, type PgQueryConfig, type PostgresStore } from '../../src/postgres.js';
import { MIGRATIONS } from '../../src/storage/postgres/migrations.js';
import { runStoreConformance } from '../../src/testing/index.js';
import { PG_SKIP_REASON, PG_URL, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';

/** Statements that do not name a tenant, and why (each pattern is matched against the statement, schema removed). */
const EXCEPTIONS: readonly [RegExp, string][] = [
  [/^(BEGIN|COMMIT|ROLLBACK)\b/, 'transaction control'],
  [/^SELECT pg_advisory_xact_lock\(/, 'the lock key hashes the tenant with the rest'],
  [/to_regclass|pg_namespace|CREATE SCHEMA|SET LOCAL search_path|tokenvault_migrations/, 'migrations: one schema'],
  [/\b(FROM|INTO|UPDATE) tenants\b/, 'the tenant table itself'],
  [/\b(FROM|INTO|UPDATE) jobs\b/, 'the background queue, claimed across tenants'],
  [/WHERE k?\.?key_lookup = \$1/, 'resolving an API or session key, which does not name its tenant'],
  [/(expires_at|cvc_purge_at|completed_at) <= \$1/, 'a sweep across tenants'],
];

const mentionsTenant = (text: string) => /\btenant_id\b/.test(text);

if (PG_URL === undefined) {
  describe.skip(`PostgreSQL statements name the tenant (${PG_SKIP_REASON})`, () => {
    it('runs the conformance suite on a recording pool', () => undefined);
  });
} else {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 6 });
  const seen = new Set<string>();
  const record = (config: PgQueryConfig) => seen.add(config.text);
  const recording: PgPool = {
    query: (config) => (record(config), pool.query(config as pg.QueryConfig)) as never,
    connect: async () => {
      const client = await pool.connect();
      const wrapped: PgPoolClient = {
        query: (config) => (record(config), client.query(config as pg.QueryConfig)) as never,
        release: (destroy) => client.release(destroy),
        on: (event, listener) => client.on(event, listener),
        removeListener: (event, listener) => client.removeListener(event, listener),
      };
      return wrapped;
    },
    end: () => pool.end(),
  };

  afterAll(async () => {
    await pool.end();
    await endAdmin();
  });

  await runStoreConformance(
    'postgres on a recording pool',
    () => createPostgresStore({ pool: recording, schema: freshSchema('queries') }),
    (store) => dropSchema((store as PostgresStore).schema),
  );

  describe('PostgreSQL statements name the tenant', () => {
    it('every statement the conformance suite sent mentions tenant_id or is a named exception', () => {
      const migrations = new Set(MIGRATIONS);
      const statements = [...seen].filter((text) => !migrations.has(text)).map((text) => text.replace(/"tv_queries_[a-z0-9_]+"\./g, '').trim());
      expect(statements.length).toBeGreaterThan(50);
      const unnamed = statements.filter((text) => !mentionsTenant(text) && !EXCEPTIONS.some(([pattern]) => pattern.test(text)));
      expect(unnamed).toEqual([]);
    });
  });
}
