// The migration that records whose credentials a proxy's key stands on (docs/proxies.md, When a
// proxy's key ends): a proxy stored before it, made by an application other than a management one,
// stands on that application's credentials as they are at the migration; the others on none.
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createPostgresStore, type PgPool } from '../../src/postgres.js';
import { MIGRATIONS as PG_MIGRATIONS, runMigrations as runPgMigrations } from '../../src/storage/postgres/migrations.js';
import { PgExecutor } from '../../src/storage/postgres/pg-executor.js';
import { MIGRATIONS as SQLITE_MIGRATIONS, runMigrations as runSqliteMigrations } from '../../src/storage/sqlite/migrations.js';
import { createSqliteStore } from '../../src/sqlite.js';
import type { Store } from '../../src/storage/store.js';
import { adminPool, dropSchema, freshSchema } from '../support/postgres.js';
import { describePostgres } from '../support/stores.js';

/** The index of the migration (found by what it adds, not its number: the lead renumbers). */
const before = (migrations: readonly string[]) => migrations.findIndex((sql) => /ADD COLUMN maker_application_id/i.test(sql));

const APPS = [
  ['t1', 'private-app', 'private', 2],
  ['t1', 'admin-app', 'management', 0],
] as const;
/** Proxies made by the private application, the management one, one since deleted, and a session. */
const PROXIES = [
  ['p-private', 'private-app'],
  ['p-admin', 'admin-app'],
  ['p-gone', 'deleted-app'],
  ['p-none', null],
] as const;

async function expectMakers(store: Store): Promise<void> {
  expect((await store.getProxy('t1', 'p-private'))!.maker).toEqual({ applicationId: 'private-app', credentialsGeneration: 2 });
  for (const id of ['p-admin', 'p-gone', 'p-none']) expect((await store.getProxy('t1', id))!.maker, id).toBeNull();
}

const proxyValues = (id: string, createdBy: string | null) => ['t1', id, 'p', 'p', 'https://api.example.com/', '[]', '[]', 'k'.repeat(64), `${id}-lookup`, createdBy, 1000];
const PROXY_COLUMNS = 'tenant_id, id, name, name_lower, destination_url, request_transforms, response_transforms, key_hash, key_lookup, created_by, created_at, require_auth';

describe("the proxy makers' migration", () => {
  it('SQLite: a proxy made before by a non-management application stands on its credentials as they are', async () => {
    const db = new Database(':memory:');
    runSqliteMigrations(db, SQLITE_MIGRATIONS.slice(0, before(SQLITE_MIGRATIONS)));
    for (const [tenant, id, type, generation] of APPS) {
      db.prepare("INSERT INTO applications (tenant_id, id, name, type, permissions, rules, created_at, credentials_generation) VALUES (?, ?, 'a', ?, '[]', '[]', 1000, ?)").run(
        tenant,
        id,
        type,
        generation,
      );
    }
    for (const [id, by] of PROXIES) db.prepare(`INSERT INTO proxies (${PROXY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`).run(...proxyValues(id, by));
    const store = createSqliteStore({ database: db });
    await store.migrate();
    await expectMakers(store);
    await store.close();
    db.close();
  });

  describePostgres('PostgreSQL', (url) => {
    it('a proxy made before by a non-management application stands on its credentials as they are', async () => {
      const schema = freshSchema('makers');
      const store = createPostgresStore({ connectionString: url, schema, max: 2 });
      try {
        await runPgMigrations(new PgExecutor(adminPool() as unknown as PgPool), schema, PG_MIGRATIONS.slice(0, before(PG_MIGRATIONS)));
        for (const [tenant, id, type, generation] of APPS) {
          await adminPool().query(
            `INSERT INTO "${schema}".applications (tenant_id, id, name, type, permissions, rules, created_at, credentials_generation) VALUES ($1, $2, 'a', $3, '[]', '[]', 1000, $4)`,
            [tenant, id, type, generation],
          );
        }
        for (const [id, by] of PROXIES) {
          await adminPool().query(`INSERT INTO "${schema}".proxies (${PROXY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, false)`, proxyValues(id, by));
        }
        await store.migrate();
        await expectMakers(store);
      } finally {
        await store.close();
        await dropSchema(schema);
      }
    });
  });
});
