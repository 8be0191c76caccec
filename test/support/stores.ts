/**
 * The one way tests loop over stores (docs/testing.md, "The project's own tests"): every helper here
 * honours TOKENVAULT_TEST_STORES (store-selection.ts) and registers a skipped placeholder, with the
 * reason, only where a run cannot happen.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe } from 'vitest';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { createPostgresStore } from '../../src/postgres.js';
import { createSqliteStore } from '../../src/sqlite.js';
import type { Store } from '../../src/storage/store.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { adoptPooledSchema, pooledPostgresStore, recordSchemaBase, releaseSchema } from './pg-schema-pool.js';
import { PGBOUNCER_SKIP_REASON, PGBOUNCER_URL, PG_ROUTES, PG_SKIP_REASON, PG_URL, endAdmin, freshSchema } from './postgres.js';
import { DESELECTED_REASON, selected } from './store-selection.js';
import { freshSqliteStore } from './sqlite-image.js';
import { SUITE_START } from './suite-start.js';

/** A store a behavioural test runs on. */
export interface TestStore {
  name: 'sqlite' | 'postgres';
  /** A fresh, empty store. Whoever creates it closes it and then calls `cleanup`. */
  create(): Store;
  /** Removes what `create` made outside the store (PostgreSQL: its schema). Call after the store closed. */
  cleanup(store: Store): Promise<void>;
  /**
   * A test vault on a fresh store of this kind, closed and cleaned up after the current test (made
   * in a `beforeAll`: after the describe block).
   */
  vault(options?: Parameters<typeof createTestVault>[0]): Promise<TestVault>;
  /**
   * A store factory for code that opens its own vault (the examples): each store it makes is
   * closed and cleaned up after the current test.
   */
  factory(): () => Store;
}

type StoreKind = Pick<TestStore, 'name' | 'create' | 'cleanup'>;

const SQLITE: StoreKind = {
  name: 'sqlite',
  // In memory, from a migrated image after the file's first store (sqlite-image.ts).
  create: () => freshSqliteStore(),
  cleanup: async () => undefined,
};

const POSTGRES: StoreKind | undefined =
  PG_URL === undefined
    ? undefined
    : {
        name: 'postgres',
        // A migrated schema from the run's pool when one is waiting (pg-schema-pool.ts).
        create: () => pooledPostgresStore({ connectionString: PG_URL!, schema: freshSchema('each'), max: 4 }),
        cleanup: (store) => releaseSchema((store as unknown as { schema: string }).schema),
      };

function withVaults(kind: StoreKind): TestStore {
  type Open = { vault: TestVault; store: Store };
  const perTest: Open[] = [];
  const perBlock: Open[] = [];
  let inTest = false;
  const closeAll = async (list: Open[]) => {
    for (const { vault, store } of list.splice(0)) {
      await vault.close();
      await kind.cleanup(store);
    }
  };
  // Registered before the body's hooks, so the flag is set before its beforeEach runs.
  beforeEach(() => {
    inTest = true;
  });
  afterEach(async () => {
    inTest = false;
    await closeAll(perTest);
  });
  afterAll(() => closeAll(perBlock));
  return {
    ...kind,
    async vault(options = {}) {
      const store = kind.create();
      let vault: TestVault;
      try {
        vault = await createTestVault({ start: SUITE_START, ...options, store });
      } catch (error) {
        await store.close();
        await kind.cleanup(store);
        throw error;
      }
      (inTest ? perTest : perBlock).push({ vault, store });
      return vault;
    },
    factory() {
      return () => {
        const store = kind.create();
        // Closing twice is harmless (Store.close is idempotent); the owner usually closed it already.
        (inTest ? perTest : perBlock).push({ vault: { close: () => store.close() } as TestVault, store });
        return store;
      };
    },
  };
}

/**
 * Runs a behavioural suite once per selected store: SQLite, and PostgreSQL when
 * TOKENVAULT_TEST_PG_URL is set (.ci/run always sets it, and fails when the server does not answer).
 * @example
 * describeEachStore('token disclosure', (store) => {
 *   it('...', async () => { const vault = await store.vault(); ... });
 * });
 */
export function describeEachStore(name: string, body: (store: TestStore) => void): void {
  if (selected('sqlite')) describe(`${name} [sqlite]`, () => body(withVaults(SQLITE)));
  else describe.skip(`${name} [sqlite] (${DESELECTED_REASON})`, () => undefined);
  if (POSTGRES) {
    const kind = POSTGRES;
    describe(`${name} [postgres]`, () => {
      afterAll(endAdmin);
      body(withVaults(kind));
    });
  } else describe.skip(`${name} [postgres] (${PG_SKIP_REASON})`, () => undefined);
}

/** A PostgreSQL-only suite (what only PostgreSQL can show); `url` is the server's. */
export function describePostgres(name: string, body: (url: string) => void): void {
  if (PG_URL === undefined) {
    describe.skip(`${name} (${PG_SKIP_REASON})`, () => undefined);
    return;
  }
  const url = PG_URL;
  describe(name, () => {
    afterAll(endAdmin);
    body(url);
  });
}

/**
 * A PostgreSQL suite run once per route to the one database: directly, and through PgBouncer in
 * transaction pooling mode (docs/scaling.md) when TOKENVAULT_TEST_PGBOUNCER_URL is set too.
 */
export function describeEachPgRoute(name: string, body: (url: string, route: 'postgres' | 'pgbouncer') => void): void {
  if (PG_URL === undefined) describe.skip(`${name} [postgres] (${PG_SKIP_REASON})`, () => undefined);
  else if (PGBOUNCER_URL === undefined) describe.skip(`${name} [pgbouncer] (${PGBOUNCER_SKIP_REASON})`, () => undefined);
  for (const route of PG_ROUTES) {
    describe(`${name} [${route.name}]`, () => {
      afterAll(endAdmin);
      body(route.url, route.name);
    });
  }
}

/** Where two instances share one database: a SQLite file, one PostgreSQL schema directly or through PgBouncer. */
export type SharedKind = 'sqlite' | 'postgres' | 'pgbouncer';

/** Two vaults (two "instances") on one database. */
export interface SharedStores {
  /** The first instance; it created the test tenant. */
  a: TestVault;
  /** The second instance, sharing a's database, master key and tenant; its own caches and clock. */
  b: TestVault;
  close(): Promise<void>;
}

/** One way instances share a database, as a multi-instance suite receives it. */
export interface SharedStore {
  kind: SharedKind;
  /** The PostgreSQL URL this kind connects through (`undefined` for SQLite). */
  url: string | undefined;
  /** Two vaults on one fresh database of this kind (`options` go to both); the caller closes them. */
  open(options?: Parameters<typeof createTestVault>[0]): Promise<SharedStores>;
}

/**
 * A multi-instance suite run once per way instances share a database: a SQLite file, and one
 * PostgreSQL schema reached by each route of `describeEachPgRoute`.
 */
export function describeEachSharedStore(name: string, body: (shared: SharedStore) => void): void {
  if (selected('sqlite')) describe(`${name} [sqlite]`, () => body({ kind: 'sqlite', url: undefined, open: (options) => sharedStores(undefined, options) }));
  else describe.skip(`${name} [sqlite] (${DESELECTED_REASON})`, () => undefined);
  describeEachPgRoute(name, (url, route) => body({ kind: route, url, open: (options) => sharedStores(url, options) }));
}

/** Opens two vaults on one fresh database: a SQLite file, or a schema at the PostgreSQL `url`. */
async function sharedStores(url: string | undefined, options: Parameters<typeof createTestVault>[0] = {}): Promise<SharedStores> {
  const masterKey = generateMasterKey();
  let open: () => Store;
  let cleanup: () => Promise<void>;
  let migrated = async (): Promise<void> => undefined;
  if (url === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'tv-shared-'));
    open = () => createSqliteStore({ filename: join(dir, 'vault.db') });
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const schema = freshSchema('shared');
    // Taken from the pool through the admin connection (directly, whichever route the pair uses).
    await adoptPooledSchema(schema);
    open = () => createPostgresStore({ connectionString: url, schema, max: 4 });
    cleanup = () => releaseSchema(schema);
    migrated = () => recordSchemaBase(schema);
  }
  const a = await createTestVault({ start: SUITE_START, ...options, store: open(), masterKey });
  await migrated();
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
