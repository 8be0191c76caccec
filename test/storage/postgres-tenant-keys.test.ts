/**
 * The live PostgreSQL schema is ready to be distributed by tenant (docs/scaling.md): every primary
 * key, unique constraint, unique index and foreign key of a tenant's table leads with its tenant
 * column, which is never null there: `tenant_id`, or in the token table `tenant`, the tenant's
 * integer key (tenant_keys; docs/storage.md, The token layout (PostgreSQL)). The global tables are
 * named, with the reason they are global.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/postgres.js';
import { adminPool, dropSchema, freshSchema } from '../support/postgres.js';
import { describePostgres } from '../support/stores.js';

/** Tables not distributed by tenant, and why (docs/scaling.md, "Scaling out"). */
const GLOBAL_TABLES: Record<string, string> = {
  tenants: 'the tenant table itself: a reference table on Citus, read to list tenants',
  jobs: 'the background queue every instance claims from, across tenants (some jobs belong to none)',
  tokenvault_migrations: 'the schema version, one per schema',
  tenant_keys: "each tenant's integer key, read by every token statement: a reference table on Citus",
};

/** Tables whose tenant column is the tenant's integer key rather than its id. */
const KEYED_BY_TENANT_KEY = new Set(['tokens']);

describePostgres('PostgreSQL keys lead with tenant_id', (url) => {
  const schema = freshSchema('keys');
  afterAll(() => dropSchema(schema));

  it('every unique key and foreign key of a tenant table starts with its tenant column, which is NOT NULL', async () => {
    const store = createPostgresStore({ connectionString: url, schema, max: 2 });
    await store.migrate();
    await store.close();
    const db = adminPool();
    const tables = (
      await db.query<{ name: string; nullable: string | null }>(
        `SELECT c.table_name AS name, col.is_nullable AS nullable FROM information_schema.tables c
           LEFT JOIN information_schema.columns col ON col.table_schema = c.table_schema AND col.table_name = c.table_name
             AND col.column_name = CASE WHEN c.table_name = ANY($2) THEN 'tenant' ELSE 'tenant_id' END
          WHERE c.table_schema = $1 AND c.table_type = 'BASE TABLE' ORDER BY 1`,
        [schema, [...KEYED_BY_TENANT_KEY]],
      )
    ).rows;
    const tenantColumn = (table: string) => (KEYED_BY_TENANT_KEY.has(table) ? 'tenant' : 'tenant_id');
    // Every global table exists (a rename would otherwise leave a stale exception behind).
    expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(Object.keys(GLOBAL_TABLES)));
    const tenantTables = tables.filter((t) => !(t.name in GLOBAL_TABLES));
    expect(tenantTables.length).toBeGreaterThanOrEqual(15);
    expect(tenantTables.filter((t) => t.nullable !== 'NO').map((t) => t.name)).toEqual([]);

    // Primary keys, unique constraints and unique indexes alike are indexes marked unique.
    const unique = (
      await db.query<{ table: string; index: string; first: string }>(
        `SELECT t.relname AS table, i.relname AS index, a.attname AS first
           FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
           JOIN pg_namespace n ON n.oid = t.relnamespace JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0]
          WHERE n.nspname = $1 AND x.indisunique`,
        [schema],
      )
    ).rows;
    const offending = unique.filter((u) => !(u.table in GLOBAL_TABLES) && u.first !== tenantColumn(u.table)).map((u) => `${u.table}.${u.index} (${u.first}, …)`);
    expect(offending).toEqual([]);
    // Each tenant table has a primary key.
    const keyed = new Set(
      (await db.query<{ table: string }>(`SELECT conrelid::regclass::text AS table FROM pg_constraint WHERE connamespace = $1::regnamespace AND contype = 'p'`, [schema])).rows.map(
        (r) => r.table.replace(/^.*\./, ''),
      ),
    );
    expect(tenantTables.filter((t) => !keyed.has(t.name)).map((t) => t.name)).toEqual([]);

    // Foreign keys join rows of one tenant: both sides start with tenant_id.
    const foreign = (
      await db.query<{ name: string; from: string; to: string }>(
        `SELECT c.conname AS name, (SELECT attname FROM pg_attribute WHERE attrelid = c.conrelid AND attnum = c.conkey[1]) AS from,
                (SELECT attname FROM pg_attribute WHERE attrelid = c.confrelid AND attnum = c.confkey[1]) AS to
           FROM pg_constraint c WHERE c.connamespace = $1::regnamespace AND c.contype = 'f'`,
        [schema],
      )
    ).rows;
    // (None today: the token layout keeps no child rows of a token, migration-lean-tokens.ts.)
    expect(foreign.filter((f) => f.from !== f.to || !['tenant_id', 'tenant'].includes(f.from)).map((f) => f.name)).toEqual([]);
  });
});
