import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/applications/api-keys.js';
import { createPostgresStore, type PgPool } from '../../src/postgres.js';
import { MIGRATIONS as PG_MIGRATIONS, runMigrations as runPgMigrations } from '../../src/storage/postgres/migrations.js';
import { PgExecutor } from '../../src/storage/postgres/pg-executor.js';
import { MIGRATIONS as SQLITE_MIGRATIONS, runMigrations as runSqliteMigrations } from '../../src/storage/sqlite/migrations.js';
import { createSqliteStore } from '../../src/sqlite.js';
import type { Store } from '../../src/storage/store.js';
import { PG_SKIP_REASON, PG_URL, adminPool, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';

/** The migration that moved keys out of `applications` (found by its comment, not its number: the lead renumbers). */
/** The index of the application keys migration (the one creating application_keys). */
const before = (migrations: readonly string[]) => migrations.findIndex((sql) => /CREATE TABLE (IF NOT EXISTS )?application_keys/i.test(sql));

const KEY = 'tv_an-existing-key-from-before-the-migration';
const APP_ROW = ['t1', 'app-1', 'old app', 'private', '["token:read"]', '[]'];

/** After the migration, the key an application had still authenticates it, as its one key. */
async function expectKeyMoved(store: Store): Promise<void> {
  const { keyHash, keyLookup } = hashApiKey(KEY);
  const found = await store.findApplicationKeys(keyLookup);
  expect(found).toHaveLength(1);
  expect(found[0]!.key).toMatchObject({ tenantId: 't1', applicationId: 'app-1', keyHash, createdBy: null, createdAt: 1000 });
  expect(found[0]!.key.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(found[0]!.application).toMatchObject({ id: 'app-1', name: 'old app', permissions: ['token:read'] });
  expect(await store.listApplicationKeys('t1', 'app-1')).toEqual([found[0]!.key]);
}

describe('the application keys migration', () => {
  it('SQLite: an existing key moves to application_keys and keeps authenticating', async () => {
    const db = new Database(':memory:');
    runSqliteMigrations(db, SQLITE_MIGRATIONS.slice(0, before(SQLITE_MIGRATIONS)));
    const { keyHash, keyLookup } = hashApiKey(KEY);
    db.prepare('INSERT INTO applications (tenant_id, id, name, type, permissions, rules, key_hash, key_lookup, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, 1000)').run(
      ...APP_ROW,
      keyHash,
      keyLookup,
    );
    const store = createSqliteStore({ database: db });
    await store.migrate();
    await expectKeyMoved(store);
    const columns = (db.prepare("SELECT name FROM pragma_table_info('applications')").all() as { name: string }[]).map((c) => c.name);
    expect(columns).not.toContain('key_hash');
    await store.close();
    db.close();
  });

  describe.skipIf(PG_URL === undefined)(`PostgreSQL${PG_URL === undefined ? ` (${PG_SKIP_REASON})` : ''}`, () => {
    afterAll(endAdmin);
    it('an existing key moves to application_keys and keeps authenticating', async () => {
      const schema = freshSchema('keys');
      const store = createPostgresStore({ connectionString: PG_URL!, schema, max: 2 });
      try {
        await runPgMigrations(new PgExecutor(adminPool() as unknown as PgPool), schema, PG_MIGRATIONS.slice(0, before(PG_MIGRATIONS)));
        const { keyHash, keyLookup } = hashApiKey(KEY);
        await adminPool().query(
          `INSERT INTO "${schema}".applications (tenant_id, id, name, type, permissions, rules, key_hash, key_lookup, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, 1000)`,
          [...APP_ROW, keyHash, keyLookup],
        );
        await store.migrate();
        await expectKeyMoved(store);
      } finally {
        await store.close();
        await dropSchema(schema);
      }
    });
  });
});
