/** Asynchronous reactor invocation (callback_url, react-async, results: docs/reactors.md, "Asynchronous invocation"), on both stores. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import type { Permission } from '../../src/permissions/permissions.js';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { AuthorizationError, NotFoundError, ValidationError } from '../../src/errors/errors.js';
import { createPostgresStore } from '../../src/postgres.js';
import { createQuickJsSandbox } from '../../src/sandbox/quickjs-sandbox.js';
import type { Sandbox, SandboxRunInput } from '../../src/sandbox/sandbox.js';
import { createSqliteStore } from '../../src/sqlite.js';
import type { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import type { SqliteStore } from '../../src/sqlite.js';
import type { Store } from '../../src/storage/store.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { PG_ROUTES, adminPool, dropSchema, freshSchema } from '../support/postgres.js';
import { type TestStore, describeEachStore } from '../support/stores.js';
import { VISA, rejection } from './helpers.js';
import { SUITE_START } from '../support/suite-start.js';

const ECHO = 'module.exports = async function (req) { return { raw: req.args }; }';
const THROWS = "module.exports = async function () { throw new Error('declined'); }";
const HOUR = 3_600_000;

let sandbox: Sandbox | undefined;
/** One real QuickJS sandbox for the file, wrapped per test to watch or hold runs. */
async function realSandbox(): Promise<Sandbox> {
  sandbox ??= await createQuickJsSandbox();
  return sandbox;
}
afterAll(async () => {
  await sandbox?.close?.();
});

/** The real sandbox, recording each run's limits and holding runs until `release()` while `hold` is set. */
async function watchedSandbox() {
  const real = await realSandbox();
  const limits: (SandboxRunInput['limits'] | undefined)[] = [];
  let hold = false;
  let release!: () => void;
  let gate = Promise.resolve();
  let started!: () => void;
  let whenStarted = new Promise<void>((resolve) => (started = resolve));
  const watched: Sandbox = {
    check: (code) => real.check(code),
    async run(input) {
      limits.push(input.limits);
      started();
      if (hold) await gate;
      return real.run(input);
    },
  };
  return {
    sandbox: watched,
    limits,
    holdNext() {
      hold = true;
      gate = new Promise<void>((resolve) => (release = resolve));
      whenStarted = new Promise<void>((resolve) => (started = resolve));
    },
    started: () => whenStarted,
    release: () => release(),
  };
}

async function setup(vault: TestVault, code = ECHO) {
  const admin = await vault.authenticate(vault.adminKey);
  const user = await vault.caller({ name: 'user', permissions: ['token:create', 'token:read', 'token:use'] });
  const formula = await vault.formulas.create(admin, { name: 'f', code, request_parameters: [{ name: 'card', type: 'object', optional: true }] });
  const reactor = await vault.reactors.create(admin, { name: 'r', formula: { id: formula.id }, configuration: {} });
  const card = await vault.tokens.create(user, { type: 'card', data: VISA });
  return { admin, user, reactorId: reactor.id, card };
}

async function errorsOf(fn: () => Promise<unknown>): Promise<Record<string, string[]>> {
  const error = await rejection(fn);
  expect(error).toBeInstanceOf(ValidationError);
  return (error as unknown as ValidationError).errors;
}

describeEachStore('asynchronous reactor runs', (store) => {
  it('accepts (202 shape), runs as pending → running → completed, and gives the result to its requester', async () => {
    const watch = await watchedSandbox();
    const vault = await store.vault({ reactors: { sandbox: watch.sandbox } });
    const { user, reactorId, card } = await setup(vault);
    const accepted = await vault.reactors.reactAsync(user, reactorId, { args: { card: `{{ ${card.id} }}` }, timeout_ms: 45_000 });
    expect(accepted).toEqual({ asyncReactorRequestId: accepted.id, id: expect.any(String), status: 'pending', reactor_id: reactorId, created_at: '2030-01-01T00:00:00.000+00:00' });
    expect(await vault.reactors.result(user, reactorId, accepted.id)).toEqual({ id: accepted.id, reactor_id: reactorId, status: 'pending', created_at: accepted.created_at });

    watch.holdNext();
    const running = vault.worker.runDue();
    await watch.started();
    expect((await vault.reactors.result(user, reactorId, accepted.id)).status).toBe('running');
    vault.clock.advance(1500);
    watch.release();
    expect(await running).toBe(1);
    // timeout_ms is the run's wall-time limit.
    expect(watch.limits.at(-1)).toMatchObject({ timeoutMs: 45_000 });
    expect(await vault.reactors.result(user, reactorId, accepted.id)).toEqual({
      id: accepted.id,
      reactor_id: reactorId,
      status: 'completed',
      created_at: accepted.created_at,
      completed_at: '2030-01-01T00:00:01.500+00:00',
      result: { raw: { card: { ...VISA, cvc: VISA.cvc } } },
      // Where Basis Theory's result endpoint puts the reactor response.
      raw: { card: { ...VISA, cvc: VISA.cvc } },
    });
  });

  it('a failing run is failed, with the problem of the error', async () => {
    const vault = await store.vault();
    const { user, reactorId } = await setup(vault, THROWS);
    const { id } = await vault.reactors.reactAsync(user, reactorId, {});
    await vault.worker.runDue();
    const view = await vault.reactors.result(user, reactorId, id);
    expect(view.status).toBe('failed');
    expect(view.error).toMatchObject({ status: expect.any(Number), type: expect.stringMatching(/^urn:tokenvault:problem:/), detail: 'declined (line 1)' });
    expect(view.result).toBeUndefined();
  });

  it('invoke with callback_url is the asynchronous form; react without it stays synchronous', async () => {
    const vault = await store.vault();
    const { user, reactorId } = await setup(vault);
    const accepted = await vault.reactors.invoke(user, reactorId, { args: { a: 1 }, callback_url: 'https://hooks.example.com/done' });
    expect(accepted).toMatchObject({ status: 'pending' });
    expect(await vault.reactors.invoke(user, reactorId, { args: { a: 1 } })).toEqual({ raw: { a: 1 } });
    await vault.worker.runDue();
    expect(await vault.reactors.result(user, reactorId, (accepted as { id: string }).id)).toMatchObject({ status: 'completed', result: { raw: { a: 1 } } });
  });

  it('every bad input is refused before anything is stored or enqueued', async () => {
    const vault = await store.vault();
    const { user, reactorId, card } = await setup(vault);
    const reader = await vault.caller({ permissions: ['token:read'] });
    const generalOnly = await vault.caller({ permissions: ['token:use'], rules: [{ priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:use'] }] });
    const generalReadingAll = await vault.caller({
      permissions: ['token:use', 'token:read'],
      rules: [
        { priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:use'] },
        { priority: 2, container: '/', transform: 'mask', permissions: ['token:read'] },
      ],
    });
    const bad: [Caller, string, unknown, unknown][] = [
      [reader, reactorId, {}, AuthorizationError],
      [user, 'no-such-reactor', {}, NotFoundError],
      // No grant at all on the card: answered as a missing token would be.
      [generalOnly, reactorId, { args: { card: `{{ ${card.id} }}` } }, ValidationError],
      [generalReadingAll, reactorId, { args: { card: `{{ ${card.id} }}` } }, AuthorizationError],
    ];
    for (const [caller, id, body, type] of bad) await expect(vault.reactors.reactAsync(caller, id, body as never)).rejects.toBeInstanceOf(type);
    expect(await errorsOf(() => vault.reactors.reactAsync(user, reactorId, { args: { card: '{{ 00000000-0000-4000-8000-000000000000 }}' } }))).toHaveProperty(['args.card']);
    expect(await errorsOf(() => vault.reactors.reactAsync(user, reactorId, { args: { card: 'not an object' } }))).toHaveProperty(['args.card']);
    for (const timeout of [9_999, 210_001, 10_000.5, '20000']) {
      expect(await errorsOf(() => vault.reactors.reactAsync(user, reactorId, { timeout_ms: timeout } as never))).toHaveProperty(['timeout_ms']);
    }
    expect(await errorsOf(() => vault.reactors.reactAsync(user, reactorId, { nope: 1 } as never))).toHaveProperty(['nope']);
    const urls = [
      '/relative',
      'ftp://example.com/x',
      'not a url',
      'http://127.0.0.1/x',
      'http://10.0.0.8/x',
      'http://169.254.169.254/latest',
      'http://100.64.0.1/',
      'http://[::1]/',
      'http://localhost:8080/',
      'https://user:pw@example.com/',
      `https://example.com/${'a'.repeat(2100)}`,
    ];
    for (const url of urls) {
      expect(await errorsOf(() => vault.reactors.invoke(user, reactorId, { callback_url: url }))).toHaveProperty(['callback_url']);
    }
    expect(await errorsOf(() => vault.reactors.invoke(user, reactorId, { callback_url: 42 } as never))).toHaveProperty(['callback_url']);
    expect(await vault.store.countDueJobs(vault.clock.now() + 365 * 24 * HOUR)).toBe(0);
    expect(await rowsOf(vault.store, 'reactor_requests')).toEqual([]);
  });

  it('the private network may be allowed for callback URLs', async () => {
    const vault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const { user, reactorId } = await setup(vault);
    await expect(vault.reactors.invoke(user, reactorId, { callback_url: 'http://127.0.0.1:9/hook' })).resolves.toMatchObject({ status: 'pending' });
  });

  it('only the requesting application reads a result: another application, another reactor path or tenant get not found', async () => {
    const vault = await store.vault();
    const { admin, user, reactorId } = await setup(vault);
    const other = await vault.caller({ permissions: ['token:use'] });
    const { id } = await vault.reactors.reactAsync(user, reactorId, {});
    await vault.worker.runDue();
    await expect(vault.reactors.result(other, reactorId, id)).rejects.toBeInstanceOf(NotFoundError);
    const formula = await vault.formulas.create(admin, { name: 'g', code: ECHO });
    const second = await vault.reactors.create(admin, { name: 'r2', formula: { id: formula.id }, configuration: {} });
    await expect(vault.reactors.result(user, second.id, id)).rejects.toBeInstanceOf(NotFoundError);
    const { application } = await vault.createTenant({ name: 'other tenant' });
    const otherAdmin = await vault.authenticate(application.key);
    const foreign = await vault.applications.create(otherAdmin, { name: 'x', type: 'private', permissions: ['token:use'] });
    await expect(vault.reactors.result(await vault.authenticate(foreign.key), reactorId, id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(vault.reactors.result(await vault.caller({ permissions: ['token:read'] }), reactorId, id)).rejects.toBeInstanceOf(AuthorizationError);
  });

  it('runs with the requester’s grants at run time, and results are removed 24 hours after they finish', async () => {
    const vault = await store.vault();
    const { admin, user, reactorId, card } = await setup(vault);
    const { id } = await vault.reactors.reactAsync(user, reactorId, { args: { card: `{{ ${card.id} }}` } });
    // The grant is withdrawn before the run: the run fails instead of seeing the card.
    await vault.applications.update(admin, user.applicationId, { name: 'user', permissions: ['token:create', 'token:read'], rules: [] });
    await vault.worker.runDue();
    expect(await vault.reactors.result(user, reactorId, id)).toMatchObject({ status: 'failed', error: { status: 403 } });
    vault.clock.advance(24 * HOUR - 1);
    await vault.sweep();
    expect(await rowsOf(vault.store, 'reactor_requests')).toHaveLength(1);
    vault.clock.advance(1);
    expect((await vault.sweep()).reactorResultsRemoved).toBe(1);
    expect(await rowsOf(vault.store, 'reactor_requests')).toEqual([]);
  });

  /** A session created by a public application and authorized by `authorizer` with these grants. */
  async function sessionOf(vault: TestVault, authorizer: Caller, grants: { permissions: Permission[] }) {
    const browser = await vault.caller({ name: 'browser', type: 'public', permissions: ['token:create'] });
    const { session_key, nonce } = await vault.sessions.create(browser);
    await vault.sessions.authorize(authorizer, { nonce, ...grants });
    return { browser, session: await vault.authenticate(session_key) };
  }

  it('a session key runs asynchronously with its own grants; only that session reads the result', async () => {
    const vault = await store.vault();
    const { user, reactorId, card } = await setup(vault);
    const backend = await vault.caller({ name: 'backend', type: 'private', permissions: ['token:create', 'token:read', 'token:use'] });
    const { browser, session } = await sessionOf(vault, backend, { permissions: ['token:use'] });
    const { id } = await vault.reactors.reactAsync(session, reactorId, { args: { card: `{{ ${card.id} }}` } });
    await vault.worker.runDue();
    const done = await vault.reactors.result(session, reactorId, id);
    expect(done).toMatchObject({ status: 'completed', result: { raw: { card: { number: VISA.number } } } });
    // Neither the application that authorized the session nor another caller reads it; the public
    // application that created it lacks token:use.
    for (const other of [backend, user]) await expect(vault.reactors.result(other, reactorId, id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(vault.reactors.result(browser, reactorId, id)).rejects.toBeInstanceOf(AuthorizationError);
  });

  it('a session run never exceeds its authorizer as it is at run time, and fails closed when the authorizer is gone', async () => {
    const vault = await store.vault();
    const { admin, reactorId, card } = await setup(vault);
    const backend = await vault.caller({ name: 'backend', type: 'private', permissions: ['token:create', 'token:read', 'token:use'] });
    const { session } = await sessionOf(vault, backend, { permissions: ['token:use'] });
    const reduced = await vault.reactors.reactAsync(session, reactorId, { args: { card: `{{ ${card.id} }}` } });
    // The authorizer loses token:use after the run was accepted: the run may not detokenize.
    await vault.applications.update(admin, backend.applicationId, { name: 'backend', permissions: ['token:create', 'token:read'] });
    await vault.worker.runDue();
    expect(await vault.reactors.result(session, reactorId, reduced.id)).toMatchObject({ status: 'failed', error: { status: 403 } });

    const other = await vault.caller({ name: 'other backend', type: 'private', permissions: ['token:create', 'token:read', 'token:use'] });
    const second = await sessionOf(vault, other, { permissions: ['token:use'] });
    const orphaned = await vault.reactors.reactAsync(second.session, reactorId, { args: { card: `{{ ${card.id} }}` } });
    await vault.applications.delete(admin, other.applicationId);
    await vault.worker.runDue();
    // The session Caller still reads its result (its key would stop authenticating now).
    expect(await vault.reactors.result(second.session, reactorId, orphaned.id)).toMatchObject({
      status: 'failed',
      error: { status: 409, detail: expect.stringContaining('authorized the session that requested this run no longer exists') },
    });
  });

  it('neither args nor results are stored in clear (request and job rows scanned)', async () => {
    const vault = await store.vault();
    const { user, reactorId, card } = await setup(vault);
    const { id } = await vault.reactors.reactAsync(user, reactorId, { args: { card: `{{ ${card.id} }}`, raw: { number: '4000056655665556', cvc: '987' } } });
    const scan = async () => {
      const text = JSON.stringify([...(await rowsOf(vault.store, 'reactor_requests')), ...(await rowsOf(vault.store, 'jobs'))], (_k, v: unknown) =>
        v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v,
      );
      // The cvc as a JSON string: three bare digits also occur by chance inside ids and sealed bytes.
      for (const secret of ['4000056655665556', '"987"', VISA.number]) expect(text).not.toContain(secret);
      return text;
    };
    expect(await scan()).toContain(id);
    await vault.worker.runDue();
    expect((await vault.reactors.result(user, reactorId, id)).result?.raw).toMatchObject({ raw: { number: '4000056655665556' }, card: { number: VISA.number } });
    await scan();
  });

  it('a run whose job is claimed again after its result is stored does not run the reactor again', async () => {
    const watch = await watchedSandbox();
    const vault = await store.vault({ reactors: { sandbox: watch.sandbox } });
    const { user, reactorId } = await setup(vault);
    // Saving the formula ran its load check in the sandbox: count the runs from here.
    const before = watch.limits.length;
    const { id } = await vault.reactors.reactAsync(user, reactorId, { args: { n: 1 } });
    await vault.worker.runDue();
    const done = await vault.reactors.result(user, reactorId, id);
    expect(done.status).toBe('completed');
    expect(watch.limits).toHaveLength(before + 1);
    // A crash between storing the result and removing the job leaves the job to be claimed again.
    const now = vault.clock.now();
    const job = {
      id: 'again',
      tenantId: user.tenantId,
      kind: 'reactor.run',
      key: null,
      payload: JSON.stringify({ tenantId: user.tenantId, requestId: id }),
      runAt: now,
      attempts: 0,
      maxAttempts: 5,
      leaseOwner: null,
      leaseExpiresAt: null,
      createdAt: now,
      lastError: null,
    };
    expect(await vault.store.enqueueJob(job)).toBe(true);
    expect(await vault.worker.runDue()).toBe(1);
    expect(watch.limits).toHaveLength(before + 1);
    expect(await vault.reactors.result(user, reactorId, id)).toEqual(done);
  });

  it('a run that another worker finished between its read and its start is announced, not run again', async () => {
    const watch = await watchedSandbox();
    const vault = await store.vault({ reactors: { sandbox: watch.sandbox } });
    const { user, reactorId } = await setup(vault);
    const before = watch.limits.length;
    const { id } = await vault.reactors.reactAsync(user, reactorId, { args: { n: 1 } });
    const start = vault.store.startReactorRequest;
    const outcome = {
      status: 'failed',
      result: null,
      error: JSON.stringify({ status: 500, detail: 'the other worker' }),
      completedAt: vault.clock.now(),
      expiresAt: vault.clock.now() + HOUR,
    } as const;
    vault.store.startReactorRequest = async (tenantId, requestId, now) => {
      // The other worker's run ends first.
      expect(await vault.store.finishReactorRequest(tenantId, requestId, outcome)).toBe(true);
      return start(tenantId, requestId, now);
    };
    expect(await vault.worker.runDue()).toBe(1);
    expect(watch.limits).toHaveLength(before);
    expect(await vault.reactors.result(user, reactorId, id)).toMatchObject({ status: 'failed', error: { detail: 'the other worker' } });
  });

  it('a run holds its job for its timeout plus at least 30 s; only a run the claim does not cover renews its lease', async () => {
    for (const [timeoutMs, renewed] of [
      [10_000, 0],
      [45_000, 1],
      [200_000, 1],
    ] as const) {
      const watch = await watchedSandbox();
      const vault = await store.vault({ reactors: { sandbox: watch.sandbox } });
      const { user, reactorId } = await setup(vault);
      const renewals: number[] = [];
      const renew = vault.store.renewJobLease;
      vault.store.renewJobLease = (id, owner, until) => {
        renewals.push(until);
        return renew(id, owner, until);
      };
      const { id } = await vault.reactors.reactAsync(user, reactorId, { args: { n: 1 }, timeout_ms: timeoutMs });
      watch.holdNext();
      const claimedAt = vault.clock.now();
      const running = vault.worker.runDue();
      await watch.started();
      // Another worker finds nothing to claim until the run's timeout and 30 s have passed.
      vault.clock.advance(timeoutMs + 30_000 - 1);
      expect(await vault.store.claimJobs('another-worker', vault.clock.now(), 60_000, 10, ['reactor.run'])).toEqual([]);
      watch.release();
      expect(await running).toBe(1);
      expect(renewals).toEqual(renewed === 0 ? [] : [claimedAt + timeoutMs + 60_000]);
      expect((await vault.reactors.result(user, reactorId, id)).status).toBe('completed');
    }
  });

  it('a vault closed mid-run releases the job; reopened on the same database, it finishes it', async () => {
    const masterKey = generateMasterKey();
    const place = reopenable(store);
    const watch = await watchedSandbox();
    const first = await createTestVault({ start: SUITE_START, store: place.open(), masterKey, reactors: { sandbox: watch.sandbox } });
    const { user, reactorId } = await setup(first);
    const userKey = (user as Caller & { key: string }).key;
    const { id } = await first.reactors.reactAsync(user, reactorId, { args: { a: 1 } });
    watch.holdNext();
    const running = first.worker.runDue();
    await watch.started();
    await first.close();
    watch.release();
    await running;

    const second = await createTestVault({ start: SUITE_START, store: place.open(), masterKey, reactors: { sandbox: await realSandbox() } });
    try {
      const caller = await second.authenticate(userKey);
      expect((await second.reactors.result(caller, reactorId, id)).status).toBe('running');
      expect(await second.worker.runDue()).toBe(1);
      expect(await second.reactors.result(caller, reactorId, id)).toMatchObject({ status: 'completed', result: { raw: { a: 1 } } });
    } finally {
      await second.close();
      await place.cleanup();
    }
  });

  if (store.name === 'sqlite') {
    // Real wall time (the sandbox's deadline): 10 s, the smallest timeout_ms, so on one store only.
    it('timeout_ms bounds a looping reactor: the run fails with the timeout error', async () => {
      const vault = await store.vault({ reactors: { sandbox: await realSandbox() } });
      const { user, reactorId } = await setup(vault, 'module.exports = async function () { for (;;) {} }');
      const { id } = await vault.reactors.reactAsync(user, reactorId, { timeout_ms: 10_000 });
      await vault.worker.runDue();
      const view = await vault.reactors.result(user, reactorId, id);
      expect(view).toMatchObject({ status: 'failed', error: { detail: expect.stringMatching(/time/i) } });
    }, 60_000);
  }

  // Directly and through PgBouncer in transaction mode (docs/scaling.md), when one is set.
  for (const route of store.name === 'postgres' ? PG_ROUTES : []) {
    it(`two instances on one database run 200 requests, each exactly once [${route.name}]`, async () => {
      const masterKey = generateMasterKey();
      const place = reopenable(store, route.url);
      const a = await createTestVault({ start: SUITE_START, store: place.open(), masterKey, reactors: { sandbox: await realSandbox() } });
      const b = await createTestVault({ start: SUITE_START, store: place.open(), masterKey, reactors: { sandbox: await realSandbox() } });
      try {
        const { user, reactorId } = await setup(a);
        const ids: string[] = [];
        for (let n = 0; n < 200; n++) ids.push((await a.reactors.reactAsync(user, reactorId, { args: { n } })).id);
        const [ranA, ranB] = await Promise.all([a.worker.runDue(), b.worker.runDue()]);
        expect(ranA + ranB).toBe(200);
        expect(ranA).toBeGreaterThan(0);
        expect(ranB).toBeGreaterThan(0);
        const results = await Promise.all(ids.map((id) => a.reactors.result(user, reactorId, id)));
        expect(results.map((r, n) => [r.status, (r.result?.raw as { n: number }).n])).toEqual(ids.map((_, n) => ['completed', n]));
        await Promise.all([a.close(), b.close()]);
        const audit = await adminPool().query(`SELECT count(*)::int AS n FROM "${place.schema}".audit_log WHERE operation = 'reactor:invoke' AND outcome = 'success'`);
        expect(audit.rows[0].n).toBe(200);
      } finally {
        await Promise.all([a.close(), b.close()]).catch(() => undefined);
        await place.cleanup();
      }
    });
  }
});

/** A database the test can open more than once (a SQLite file, a PostgreSQL schema). */
function reopenable(store: TestStore, url = PG_ROUTES[0]?.url): { open(): Store; cleanup(): Promise<void>; schema?: string } {
  if (store.name === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tokenvault-async-'));
    return { open: () => createSqliteStore({ filename: join(dir, 'vault.db') }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const schema = freshSchema('async');
  return { schema, open: () => createPostgresStore({ connectionString: url!, schema, max: 4 }), cleanup: () => dropSchema(schema) };
}

/** Every row of a table of the store (SQLite or PostgreSQL). */
async function rowsOf(store: Store, table: 'reactor_requests' | 'jobs'): Promise<Record<string, unknown>[]> {
  if ('database' in store) return (store as SqliteStore).database.prepare(`SELECT * FROM ${table}`).all() as Record<string, unknown>[];
  return (await adminPool().query(`SELECT * FROM "${(store as PostgresStore).schema}".${table}`)).rows;
}
