import type { ApplicationGrants, Caller } from '../auth/caller.js';
import { makeTestCaller, testApplicationCaller } from '../auth/test-callers.js';
import { ManualClock } from '../common/clock.js';
import { generateMasterKey } from '../crypto/key-provider.js';
import type { AccessRule, ApplicationType, Permission } from '../permissions/permissions.js';
import { createSqliteStore } from '../sqlite.js';
import type { OperatorTools } from '../operator/operator-tools.js';
import type { ReactorRunFinished } from '../reactors/async-runs.js';
import { assembleVault, type Vault, type VaultOptions } from '../vault.js';

import type { Store } from '../storage/store.js';

/**
 * Registers the store conformance suite (vitest `describe`/`it`) for a Store implementation:
 * `await runStoreConformance('my store', () => createMyStore())` at the top of a test file.
 * It loads vitest only when called, so `createTestVault` users do not need vitest.
 */
export async function runStoreConformance(name: string, factory: () => Store | Promise<Store>, cleanup?: (store: Store) => void | Promise<void>): Promise<void> {
  const suite = await import('./store-conformance.js');
  suite.runStoreConformance(name, factory, cleanup);
  const atomic = await import('./store-conformance-atomic.js');
  atomic.runAtomicConformance(name, factory, cleanup);
}
export { ManualClock } from '../common/clock.js';
/** Record builders and constants of the store conformance suite, for a store's own extra tests. */
export * as storeFixtures from './store-fixtures.js';
/**
 * A Caller for any tenant and grants, without an application or key: for unit tests of code that
 * takes a Caller. Only a test vault accepts it; a vault from `createVault` refuses it and takes
 * Callers from `vault.authenticate(key)` alone (docs/testing.md).
 */
export function makeCaller(app: ApplicationGrants): Caller {
  return makeTestCaller(app);
}
export { transformFor } from '../auth/caller.js';

export interface TestVault extends Vault {
  readonly clock: ManualClock;
  readonly tenantId: string;
  /** The tenant's management application's key. */
  readonly adminKey: string;
  /**
   * The store this test vault was built on, for tests that check what was written. Not part of
   * `Vault`: the vault's services are the only way its holder reaches the data (authorized per call).
   */
  readonly store: Store;
  /**
   * The operator tools over this vault's key ring and store (what `openOperator` from
   * `tokenvault/operator` hands out beside a vault): key rotation, listing tenants, administrator
   * recovery. Not part of `Vault` either.
   */
  readonly operator: OperatorTools;
  /**
   * Reports an asynchronous reactor run as ended, as the job worker does (the callback to its
   * `callbackUrl` and the reactor.completed / reactor.failed event), for tests of callbacks without
   * running a reactor. Not part of `Vault`: it signs what it is given with the tenant's secret.
   */
  runFinished(event: ReactorRunFinished): Promise<void>;
  /**
   * Creates an application with these permissions (and rules) in the test tenant and returns its
   * Caller. The type defaults to the first type that may hold every permission.
   */
  caller(options?: { permissions?: Permission[]; rules?: AccessRule[]; type?: ApplicationType; name?: string }): Promise<Caller & { key: string }>;
}

/** Options of `createTestVault`: those of `createVault`, all optional, plus a store factory and the clock's start. */
export type TestVaultOptions = Omit<Partial<VaultOptions>, 'store' | 'clock'> & {
  /**
   * The store: a Store, or a function that makes a fresh one (called once per vault, so one
   * factory serves many tests). Default: SQLite `:memory:`. The vault closes it on `close()`;
   * removing what the store made outside itself (a PostgreSQL schema) is the caller's part.
   */
  store?: Store | (() => Store | Promise<Store>);
  /**
   * Where the ManualClock starts; default the real time when the vault is created, so expiries an
   * application computes from `Date.now()` are in the future and webhooks carry a timestamp their
   * receivers accept. Give a fixed instant for tests that compare times exactly.
   */
  start?: string | number | Date;
};

/**
 * An in-memory vault for tests: SQLite `:memory:` (or the store you pass), a random master key, a
 * ManualClock the test advances, no background sweep (call `vault.sweep()`), a job worker that runs
 * only when told (`vault.worker.runDue()`), and one tenant.
 * @example
 * const vault = await createTestVault();
 * const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
 * const token = await vault.tokens.create(app, { type: 'token', data: 'secret' });
 * @example
 * // The same tests on PostgreSQL: one fresh schema per vault.
 * const vault = await createTestVault({ store: () => createPostgresStore({ connectionString, schema: `t_${randomUUID().slice(0, 8)}` }) });
 */
export async function createTestVault(options: TestVaultOptions = {}): Promise<TestVault> {
  const clock = new ManualClock(options.start ?? Date.now());
  const { start: _start, store: given, ...rest } = options;
  const store = given === undefined ? createSqliteStore({ filename: ':memory:' }) : typeof given === 'function' ? await given() : given;
  // A test vault also accepts the test Callers of this entry (makeCaller, caller()); a vault from
  // createVault refuses them (docs/testing.md).
  const { vault, operator, runFinished } = await assembleVault(
    {
      masterKey: generateMasterKey(),
      sweepIntervalMs: 0,
      ...rest,
      store,
      // Tests drive background work themselves: `await vault.worker.runDue()` after advancing the clock.
      jobs: { start: false, shutdownGraceMs: 0, ...rest.jobs },
      clock,
    },
    { callers: ['vault', 'test'] },
  );
  const { tenant, application } = await vault.createTenant({ name: 'test' });
  const admin = await vault.authenticate(application.key);
  return Object.freeze({
    ...vault,
    clock,
    store,
    operator,
    runFinished,
    tenantId: tenant.id,
    adminKey: application.key,
    async caller({ permissions = [], rules = [], type, name = 'test app' }: Parameters<TestVault['caller']>[0] = {}) {
      const chosen =
        type ??
        (permissions.some((p) => p.startsWith('application:') || p.startsWith('webhook:') || p === 'log:read')
          ? 'management'
          : permissions.every((p) => p === 'token:create' || p === 'token:update')
            ? 'public'
            : 'private');
      const app = await vault.applications.create(admin, { name, type: chosen, permissions, rules });
      return testApplicationCaller({ tenantId: tenant.id, id: app.id, type: chosen, permissions, rules: app.rules }, app.key!);
    },
  });
}
