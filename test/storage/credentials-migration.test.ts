import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { createPostgresStore, type PgPool } from '../../src/postgres.js';
import { MIGRATIONS as PG_MIGRATIONS, runMigrations as runPgMigrations } from '../../src/storage/postgres/migrations.js';
import { PgExecutor } from '../../src/storage/postgres/pg-executor.js';
import { MIGRATIONS as SQLITE_MIGRATIONS, runMigrations as runSqliteMigrations } from '../../src/storage/sqlite/migrations.js';
import { createSqliteStore } from '../../src/sqlite.js';
import type { Store } from '../../src/storage/store.js';
import { adminPool, dropSchema, freshSchema } from '../support/postgres.js';
import { describePostgres } from '../support/stores.js';

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
    db.prepare(
      'INSERT INTO applications (tenant_id, id, name, type, permissions, rules, key_hash, key_lookup, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, 1000)',
    ).run(...APP_ROW, keyHash, keyLookup);
    const store = createSqliteStore({ database: db });
    await store.migrate();
    await expectKeyMoved(store);
    const columns = (db.prepare("SELECT name FROM pragma_table_info('applications')").all() as { name: string }[]).map((c) => c.name);
    expect(columns).not.toContain('key_hash');
    await store.close();
    db.close();
  });

  describePostgres('PostgreSQL', (url) => {
    it('an existing key moves to application_keys and keeps authenticating', async () => {
      const schema = freshSchema('keys');
      const store = createPostgresStore({ connectionString: url, schema, max: 2 });
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

/** The index of the credentials generations migration (found by what it adds). */
const beforeGenerations = (migrations: readonly string[]) => migrations.findIndex((sql) => /ADD COLUMN credentials_generation/i.test(sql));
const SESSION_ROW = ['t1', 's1', 'app-1', 'a'.repeat(64), 'a'.repeat(16), 'b'.repeat(64), 1000, 2000, 'app-2', 1500, '{"permissions":["token:read"],"rules":[]}'];
const SESSION_INSERT = (table: string, p: (i: number) => string) =>
  `INSERT INTO ${table} (tenant_id, id, application_id, key_hash, key_lookup, nonce_hash, created_at, expires_at, authorized_by, authorized_at, grants) VALUES (${SESSION_ROW.map((_, i) => p(i + 1)).join(', ')})`;

/** After the migration, applications start at generation 0 and a session authorized before it still matches them. */
async function expectGenerations(store: Store): Promise<void> {
  expect((await store.getApplication('t1', 'app-1'))!.credentialsGeneration).toBe(0);
  expect(await store.findSessions('a'.repeat(16))).toMatchObject([{ id: 's1', creatorGeneration: 0, authorizedBy: 'app-2', authorizerGeneration: 0 }]);
}

describe('the credentials generations migration', () => {
  it('SQLite: existing applications and authorized sessions start at generation 0', async () => {
    const db = new Database(':memory:');
    runSqliteMigrations(db, SQLITE_MIGRATIONS.slice(0, beforeGenerations(SQLITE_MIGRATIONS)));
    db.prepare('INSERT INTO applications (tenant_id, id, name, type, permissions, rules, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, NULL, 1000)').run(...APP_ROW);
    db.prepare(SESSION_INSERT('sessions', () => '?')).run(...SESSION_ROW);
    const store = createSqliteStore({ database: db });
    await store.migrate();
    await expectGenerations(store);
    await store.close();
    db.close();
  });

  describePostgres('PostgreSQL', (url) => {
    it('existing applications and authorized sessions start at generation 0', async () => {
      const schema = freshSchema('generations');
      const store = createPostgresStore({ connectionString: url, schema, max: 2 });
      try {
        await runPgMigrations(new PgExecutor(adminPool() as unknown as PgPool), schema, PG_MIGRATIONS.slice(0, beforeGenerations(PG_MIGRATIONS)));
        await adminPool().query(
          `INSERT INTO "${schema}".applications (tenant_id, id, name, type, permissions, rules, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, NULL, 1000)`,
          APP_ROW,
        );
        await adminPool().query(
          SESSION_INSERT(`"${schema}".sessions`, (i) => `$${i}`),
          SESSION_ROW,
        );
        await store.migrate();
        await expectGenerations(store);
      } finally {
        await store.close();
        await dropSchema(schema);
      }
    });
  });
});
