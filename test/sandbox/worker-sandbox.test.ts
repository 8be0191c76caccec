/**
 * The worker-thread sandbox (quickjs-sandbox.ts, worker-pool.ts, run-task.ts): the thread serving
 * requests keeps serving while reactor code spins, a run past its deadline is ended by terminating
 * its worker, runs queue (boundedly) for a worker, nested runs inherit their caller's deadline and
 * end with it without ever starving for a worker, and a worker whose memory grew is replaced.
 *
 * Every wait is on an event (a host call reached, a run settled); short `timeoutMs` limits make the
 * hostile runs end quickly, and no assertion is about how long anything took.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceUnavailableError, ValidationError } from '../../src/errors/errors.js';
import { createFetchHandler } from '../../src/http/index.js';
import { createQuickJsSandbox, type QuickJsSandbox } from '../../src/sandbox/quickjs-sandbox.js';
import type { SandboxHost, SandboxRunInput } from '../../src/sandbox/sandbox.js';
import { createTestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { deferred, reactorFailure } from './helpers.js';
import { SUITE_START } from '../support/suite-start.js';

const NO_HOST: SandboxHost = { bt: null, fetch: null };
const REQ = { args: null, configuration: {} };
const CANCELLED = 'Reactor run cancelled: the reactor that called it has ended';
/**
 * Limit of the hostile runs: short, yet long enough for the run to be well inside its loop or
 * built-in call when the test looks (on a loaded machine a run may otherwise time out before it).
 */
const HOSTILE_MS = 1_000;

const opened: QuickJsSandbox[] = [];
async function sandboxWith(options: Parameters<typeof createQuickJsSandbox>[0]): Promise<QuickJsSandbox> {
  const sandbox = await createQuickJsSandbox(options);
  opened.push(sandbox);
  return sandbox;
}
afterEach(async () => {
  for (const sandbox of opened.splice(0)) await sandbox.close();
});

/** A run that calls `req.bt.started()` and then runs `body`; `started` resolves once the worker is in the reactor. */
function startRun(sandbox: QuickJsSandbox, body: string, extra: Partial<SandboxRunInput> = {}) {
  const started = deferred();
  let settled = false;
  const run = sandbox
    .run({
      code: `module.exports = async (req) => { await req.bt.started(); ${body} }`,
      req: REQ,
      host: { fetch: null, bt: { started: async () => started.resolve() } },
      ...extra,
    })
    .finally(() => {
      settled = true;
    });
  run.catch(() => undefined);
  // A run that ends before it reaches the reactor fails the wait instead of hanging it.
  const reached = Promise.race([started.promise, run.then(() => Promise.reject(new Error('the run ended before it started')))]);
  return { run, started: reached, settled: () => settled };
}

/** A sandbox whose worker has started: a run's deadline includes waiting for a worker to start. */
async function warmSandbox(options: Parameters<typeof createQuickJsSandbox>[0]): Promise<QuickJsSandbox> {
  const sandbox = await sandboxWith(options);
  await sandbox.run({ code: 'module.exports = () => 0', req: REQ, host: NO_HOST });
  return sandbox;
}

describe('the thread serving requests keeps serving while reactor code runs', () => {
  it.each([
    ['an infinite loop', 'for (;;) {}'],
    // One built-in call: QuickJS's interrupt handler never fires inside it (it ran 105 s past a 10 s
    // limit in-thread); only terminating the worker ends it.
    ['one long built-in call', "return 'a'.repeat(2 ** 23).indexOf('a'.repeat(2 ** 13) + 'b')"],
  ])('%s: /healthz and the event loop answer while it runs, and the run ends with the timeout error', async (_name, body) => {
    const vault = await createTestVault({ start: SUITE_START });
    try {
      const handler = createFetchHandler(vault);
      expect((await handler(new Request('http://vault.test/healthz'))).status).toBe(200);
      const sandbox = await warmSandbox({ workers: { size: 1 } });
      const hostile = startRun(sandbox, body, { limits: { timeoutMs: HOSTILE_MS } });
      await hostile.started; // the worker is now inside the reactor

      await new Promise((resolve) => setImmediate(resolve));
      const health = await handler(new Request('http://vault.test/healthz'));
      expect(health.status).toBe(200);
      expect(hostile.settled()).toBe(false);

      const error = await reactorFailure(hostile.run);
      expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500, message: `Reactor exceeded its time limit of ${HOSTILE_MS} ms` });
      // The same sandbox runs the next reactor (on a new worker when the old one was terminated).
      await expect(sandbox.run({ code: 'module.exports = () => 7', req: REQ, host: NO_HOST })).resolves.toMatchObject({ result: 7 });
    } finally {
      await vault.close();
    }
  });

  it('terminates the worker of a run the engine cannot stop', async () => {
    const sandbox = await warmSandbox({ workers: { size: 1 } });
    const hostile = startRun(sandbox, "return 'a'.repeat(2 ** 23).indexOf('a'.repeat(2 ** 13) + 'b')", { limits: { timeoutMs: HOSTILE_MS } });
    await hostile.started;
    await reactorFailure(hostile.run);
    expect(sandbox.stats()).toMatchObject({ terminated: 1 });
  });
});

describe('queueing for a worker', () => {
  function holder(sandbox: QuickJsSandbox) {
    const release = deferred();
    const started = deferred();
    const run = sandbox.run({
      code: 'module.exports = async (req) => { await req.bt.hold(); return "held" }',
      req: REQ,
      host: {
        fetch: null,
        bt: {
          hold: async () => {
            started.resolve();
            await release.promise;
          },
        },
      },
    });
    return { run, started: started.promise, release: () => release.resolve() };
  }

  // One run per worker: a run awaiting the host would otherwise let the next one join its worker
  // (interleaving, tested in worker-interleave.test.ts).
  it('queues runs when every worker is busy and answers 503 once the queue is full', async () => {
    const sandbox = await sandboxWith({ workers: { size: 1, maxQueued: 1, runsPerWorker: 1 } });
    const first = holder(sandbox);
    await first.started;
    const second = sandbox.run({ code: 'module.exports = () => "second"', req: REQ, host: NO_HOST });
    expect(sandbox.stats()).toMatchObject({ busy: 1, queued: 1 });
    const third = await reactorFailure(sandbox.run({ code: 'module.exports = () => "third"', req: REQ, host: NO_HOST }));
    expect(third).toMatchObject({ kind: 'ServiceUnavailableError', status: 503 });
    expect(third.message).toMatch(/busy/);
    first.release();
    await expect(first.run).resolves.toMatchObject({ result: 'held' });
    await expect(second).resolves.toMatchObject({ result: 'second' });
  });

  // The time limit starts when the worker takes the run (run-task.test.ts); the wait has its own bound.
  it('fails a run still queued after maxQueueWaitMs with 503 and Retry-After, not the time limit error', async () => {
    const sandbox = await sandboxWith({ workers: { size: 1, runsPerWorker: 1, maxQueueWaitMs: 50 } });
    const first = holder(sandbox);
    await first.started;
    const queued = await sandbox.run({ code: 'module.exports = () => 1', req: REQ, host: NO_HOST, limits: { timeoutMs: 10 } }).catch((e: unknown) => e);
    expect(queued).toBeInstanceOf(ServiceUnavailableError);
    expect(queued).toMatchObject({ retryAfterSeconds: 1, message: 'No reactor worker was free within 50 ms; try again' });
    expect(sandbox.stats()).toMatchObject({ busy: 1, queued: 0 });
    first.release();
    await expect(first.run).resolves.toMatchObject({ result: 'held' });
  });

  it('fails runs in progress with 503 when the sandbox closes', async () => {
    const sandbox = await sandboxWith({ workers: { size: 1 } });
    const first = holder(sandbox);
    first.run.catch(() => undefined);
    await first.started;
    await sandbox.close();
    expect(await reactorFailure(first.run)).toMatchObject({ kind: 'ServiceUnavailableError', status: 503 });
  });

  it('validates its options once, at construction', async () => {
    await expect(createQuickJsSandbox({ workers: { size: 0 } })).rejects.toBeInstanceOf(ValidationError);
    const error = await createTestVault({ start: SUITE_START, reactors: { workers: { maxQueued: -1 } } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(Object.keys((error as ValidationError).errors)).toEqual(['options.reactors.workers.maxQueued']);
  });
});

describe('nested runs', () => {
  it('get at most the time their caller has left', async () => {
    const sandbox = await warmSandbox({ workers: { size: 1 } });
    let inner: Promise<unknown> | undefined;
    const host: SandboxHost = {
      fetch: null,
      bt: {
        nested: async () => {
          inner = sandbox.run({ code: 'module.exports = () => { for (;;) {} }', req: REQ, host: NO_HOST, limits: { timeoutMs: 60_000 } });
          return inner;
        },
      },
    };
    await reactorFailure(sandbox.run({ code: 'module.exports = (req) => req.bt.nested()', req: REQ, host, limits: { timeoutMs: 300 } }));
    const error = await reactorFailure(inner!);
    // It timed out on the caller's budget, or was cancelled when the caller ended: never 60 s.
    if (error.message !== CANCELLED) {
      const limit = Number(/^Reactor exceeded its time limit of (\d+) ms$/.exec(error.message)?.[1]);
      expect(limit).toBeLessThanOrEqual(300);
    }
  });

  it('are cancelled, their worker terminated, when their caller ends', async () => {
    const sandbox = await sandboxWith({ workers: { size: 1 } });
    const innerStarted = deferred();
    let inner: Promise<unknown> | undefined;
    const host: SandboxHost = {
      fetch: null,
      bt: {
        spawn: async () => {
          inner = sandbox.run({
            code: 'module.exports = async (req) => { await req.bt.started(); for (;;) {} }',
            req: REQ,
            host: { fetch: null, bt: { started: async () => innerStarted.resolve() } },
          });
          inner.catch(() => undefined);
        },
        innerStarted: () => innerStarted.promise,
      },
    };
    const outer = await sandbox.run({ code: 'module.exports = async (req) => { await req.bt.spawn(); await req.bt.innerStarted(); return "done" }', req: REQ, host });
    expect(outer.result).toBe('done');
    expect(await reactorFailure(inner!)).toMatchObject({ kind: 'ReactorRuntimeError', status: 500, message: CANCELLED });
    expect(sandbox.stats()).toMatchObject({ terminated: 1 });
  });
});

describe('worker memory', () => {
  it('replaces a worker whose WebAssembly memory grew past the threshold, after its run', async () => {
    const sandbox = await sandboxWith({ workers: { size: 1, recycleAboveBytes: 32 * 1024 * 1024 } });
    await expect(sandbox.run({ code: 'module.exports = () => "small"', req: REQ, host: NO_HOST })).resolves.toMatchObject({ result: 'small' });
    expect(sandbox.stats()).toMatchObject({ recycled: 0 });
    const big = await sandbox.run({ code: 'module.exports = () => "x".repeat(40 * 1024 * 1024).length', req: REQ, host: NO_HOST });
    expect(big.result).toBe(40 * 1024 * 1024);
    expect(sandbox.stats()).toMatchObject({ recycled: 1 });
    await expect(sandbox.run({ code: 'module.exports = () => "next"', req: REQ, host: NO_HOST })).resolves.toMatchObject({ result: 'next' });
  });

  it("keeps one run's memory out of another's: concurrent large runs each get their own limit", async () => {
    // One run per worker: interleaved, a queued run would join a worker whose run awaits `tick`,
    // and on a loaded machine its 40 MiB allocation delays the answer of the other past its limit.
    const sandbox = await sandboxWith({ workers: { size: 2, runsPerWorker: 1 } });
    const code = 'module.exports = async (req) => { const s = "y".repeat(40 * 1024 * 1024); await req.bt.tick(); return s.length }';
    const host: SandboxHost = { fetch: null, bt: { tick: async () => null } };
    const runs = await Promise.all(Array.from({ length: 4 }, () => sandbox.run({ code, req: REQ, host })));
    expect(runs.map((r) => r.result)).toEqual(Array(4).fill(40 * 1024 * 1024));
  });
});

describeEachStore('nested reactors on a pool of one worker', (store) => {
  const RECURSE = `module.exports = async (req) => {
    if (req.args.n === 0) return { raw: 0 };
    const inner = await req.bt.reactors.react(req.args.self, { args: { self: req.args.self, n: req.args.n - 1 } });
    return { raw: inner.raw + 1 };
  }`;

  it('never deadlock: three levels of nesting complete, for two callers at once', async () => {
    const vault = await store.vault({ reactors: { workers: { size: 1 } } });
    const admin = await vault.authenticate(vault.adminKey);
    const app = await vault.caller({ permissions: ['token:use'] });
    const formula = await vault.formulas.create(admin, { name: 'recurse', code: RECURSE });
    const reactor = await vault.reactors.create(admin, { name: 'recurse', formula: { id: formula.id }, configuration: {}, application: { id: app.applicationId } });
    const call = () => vault.reactors.react(app, reactor.id, { args: { self: reactor.id, n: 3 } });
    await expect(call()).resolves.toEqual({ raw: 3 });
    await expect(Promise.all([call(), call()])).resolves.toEqual([{ raw: 3 }, { raw: 3 }]);
  });
});
