import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { createPostgresStore } from '../../src/postgres.js';
import { createSqliteStore } from '../../src/sqlite.js';
import type { Store } from '../../src/storage/store.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { PGBOUNCER_URL, PG_URL, dropSchema, freshSchema } from './postgres.js';
import { SUITE_START } from './suite-start.js';

/** Two vaults (two "instances") on one database: a SQLite file, or one PostgreSQL schema. */
export interface SharedStores {
  /** The first instance; it created the test tenant. */
  a: TestVault;
  /** The second instance, sharing a's database, master key and tenant; its own caches and clock. */
  b: TestVault;
  close(): Promise<void>;
}

/** Where two instances share one database: a SQLite file, one PostgreSQL schema directly or through PgBouncer. */
export type SharedKind = 'sqlite' | 'postgres' | 'pgbouncer';

/**
 * Stores kinds to run on: SQLite always, PostgreSQL when TOKENVAULT_TEST_PG_URL is set, PostgreSQL
 * through PgBouncer in transaction mode when TOKENVAULT_TEST_PGBOUNCER_URL is set too.
 */
export const SHARED_KINDS: SharedKind[] = [
  'sqlite',
  ...(PG_URL === undefined ? [] : ['postgres' as const]),
  ...(PGBOUNCER_URL === undefined ? [] : ['pgbouncer' as const]),
];

/** The URL a PostgreSQL kind connects to. */
export function sharedUrl(kind: Exclude<SharedKind, 'sqlite'>): string {
  return kind === 'postgres' ? PG_URL! : PGBOUNCER_URL!;
}

/** Opens two vaults on one fresh database of that kind. `options` go to both. */
export async function sharedStores(kind: SharedKind, options: Parameters<typeof createTestVault>[0] = {}): Promise<SharedStores> {
  const masterKey = generateMasterKey();
  let open: () => Store;
  let cleanup: () => Promise<void>;
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tv-shared-'));
    open = () => createSqliteStore({ filename: join(dir, 'vault.db') });
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const schema = freshSchema('shared');
    open = () => createPostgresStore({ connectionString: sharedUrl(kind), schema, max: 4 });
    cleanup = () => dropSchema(schema);
  }
  const a = await createTestVault({ start: SUITE_START, ...options, store: open(), masterKey });
  const b = await createTestVault({ start: SUITE_START, ...options, store: open(), masterKey });
  return {
    a,
    b,
    async close() {
      await a.close();
      await b.close();
      await cleanup();
    },
  };
}
