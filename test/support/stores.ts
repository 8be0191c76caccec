import { afterAll, afterEach, beforeEach, describe } from 'vitest';
import { createPostgresStore } from '../../src/postgres.js';
import { createSqliteStore } from '../../src/sqlite.js';
import type { Store } from '../../src/storage/store.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { PG_SKIP_REASON, PG_URL, dropSchema, endAdmin, freshSchema } from './postgres.js';
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
  create: () => createSqliteStore({ filename: ':memory:' }),
  cleanup: async () => undefined,
};

const POSTGRES: StoreKind | undefined =
  PG_URL === undefined
    ? undefined
    : {
        name: 'postgres',
        create: () => createPostgresStore({ connectionString: PG_URL!, schema: freshSchema('each'), max: 4 }),
        cleanup: (store) => dropSchema((store as unknown as { schema: string }).schema),
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
 * Runs a behavioural suite once per store: SQLite always, PostgreSQL when TOKENVAULT_TEST_PG_URL is
 * set (.ci/run always sets it, and fails when the server does not answer).
 * @example
 * describeEachStore('token disclosure', (store) => {
 *   it('...', async () => { const vault = await store.vault(); ... });
 * });
 */
export function describeEachStore(name: string, body: (store: TestStore) => void): void {
  describe(`${name} [sqlite]`, () => body(withVaults(SQLITE)));
  if (POSTGRES) {
    const kind = POSTGRES;
    describe(`${name} [postgres]`, () => {
      afterAll(endAdmin);
      body(withVaults(kind));
    });
  } else describe.skip(`${name} [postgres] (${PG_SKIP_REASON})`, () => undefined);
}
