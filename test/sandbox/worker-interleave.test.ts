/**
 * Runs interleaved on one worker (worker-pool.ts, "Interleaving"): while every run on a worker
 * awaits the host, another run of the same owner joins it instead of waiting; each keeps its own
 * QuickJS context; a run of another owner never joins; and when a run on a shared worker cannot be
 * stopped and its worker is terminated, the runs awaiting the host beside it fail with 503.
 *
 * Every wait is on an event (a host call reached, a run settled); the runaway run has a short limit
 * so it ends quickly, and no assertion is about how long anything took.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { createQuickJsSandbox, type QuickJsSandbox } from '../../src/sandbox/quickjs-sandbox.js';
import type { RunOwner, SandboxRunInput } from '../../src/sandbox/sandbox.js';
import { deferred, reactorFailure } from './helpers.js';

const A: RunOwner = { tenantId: 't1', applicationId: 'a' };
const B: RunOwner = { tenantId: 't2', applicationId: 'b' };

const opened: QuickJsSandbox[] = [];
afterEach(async () => {
  for (const sandbox of opened.splice(0)) await sandbox.close();
});
async function warmSandbox(workers: { size: number; runsPerWorker?: number }): Promise<QuickJsSandbox> {
  const sandbox = await createQuickJsSandbox({ workers });
  opened.push(sandbox);
  await sandbox.run({ code: 'module.exports = () => 0', req: { args: null, configuration: {} }, host: { bt: null, fetch: null } });
  return sandbox;
}

/**
 * A run that keeps `req.args.secret` in a global, awaits `req.bt.hold()` (which resolves once `held`
 * is called back and `release` resolves), then returns the global it finds.
 */
function holding(sandbox: QuickJsSandbox, secret: string, owner: RunOwner | undefined, extra: Partial<SandboxRunInput> = {}) {
  const held = deferred();
  const release = deferred();
  const promise = sandbox.run({
    code: 'module.exports = async (req) => { globalThis.secret = req.args.secret; await req.bt.hold(); return globalThis.secret }',
    req: { args: { secret }, configuration: {} },
    host: {
      fetch: null,
      bt: {
        hold: async () => {
          held.resolve();
          await release.promise;
        },
      },
    },
    ...(owner === undefined ? {} : { owner }),
    ...extra,
  });
  promise.catch(() => undefined);
  return { promise, held: held.promise, release: () => release.resolve() };
}

describe('runs interleaved on one worker', () => {
  it("join a worker whose runs all await the host, and never see each other's data", async () => {
    const sandbox = await warmSandbox({ size: 1 });
    const first = holding(sandbox, 'first', A);
    await first.held;
    const second = holding(sandbox, 'second', A);
    await second.held;
    expect(sandbox.stats()).toMatchObject({ workers: 1, busy: 1, running: 2, queued: 0, spawned: 1 });
    second.release();
    first.release();
    await expect(first.promise).resolves.toMatchObject({ result: 'first' });
    await expect(second.promise).resolves.toMatchObject({ result: 'second' });
  });

  it("never take another owner's run, nor one of the same owner beyond runsPerWorker", async () => {
    const sandbox = await warmSandbox({ size: 1, runsPerWorker: 2 });
    const first = holding(sandbox, 'a1', A);
    await first.held;
    const other = holding(sandbox, 'b', B);
    expect(sandbox.stats()).toMatchObject({ running: 1, queued: 1 });
    first.release();
    await other.held;
    const second = holding(sandbox, 'b2', B);
    await second.held;
    const third = holding(sandbox, 'b3', B);
    expect(sandbox.stats()).toMatchObject({ running: 2, queued: 1 });
    other.release();
    second.release();
    third.release();
    await expect(Promise.all([first.promise, other.promise, second.promise, third.promise])).resolves.toMatchObject([
      { result: 'a1' },
      { result: 'b' },
      { result: 'b2' },
      { result: 'b3' },
    ]);
  });

  it('is off with runsPerWorker 1, and runsPerWorker is checked at construction', async () => {
    const sandbox = await warmSandbox({ size: 1, runsPerWorker: 1 });
    const first = holding(sandbox, 'first', A);
    await first.held;
    const second = holding(sandbox, 'second', A);
    expect(sandbox.stats()).toMatchObject({ running: 1, queued: 1 });
    first.release();
    await second.held;
    second.release();
    await expect(second.promise).resolves.toMatchObject({ result: 'second' });
    const error = await createQuickJsSandbox({ workers: { runsPerWorker: 0 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(Object.keys((error as ValidationError).errors)).toEqual(['workers.runsPerWorker']);
  });
});

describe('a runaway run beside a run awaiting the host', () => {
  /** A run of A that joins the worker, reports that it started, then runs `body` with a 1 s limit. */
  function runaway(sandbox: QuickJsSandbox, body: string) {
    const started = deferred();
    const promise = sandbox.run({
      code: `module.exports = async (req) => { await req.bt.started(); ${body} }`,
      req: { args: null, configuration: {} },
      host: { fetch: null, bt: { started: async () => started.resolve() } },
      owner: A,
      limits: { timeoutMs: 1_000 },
    });
    promise.catch(() => undefined);
    return { promise, started: started.promise };
  }

  it('stopped by the engine at its deadline: the awaiting run then completes on the same worker', async () => {
    const sandbox = await warmSandbox({ size: 1 });
    const waiting = holding(sandbox, 'kept', A);
    await waiting.held;
    const spinner = runaway(sandbox, 'for (;;) {}');
    await spinner.started;
    waiting.release();
    expect((await reactorFailure(spinner.promise)).message).toBe('Reactor exceeded its time limit of 1000 ms');
    await expect(waiting.promise).resolves.toMatchObject({ result: 'kept' });
    expect(sandbox.stats()).toMatchObject({ terminated: 0, spawned: 1 });
  });

  it('whose worker must be terminated: the awaiting run fails with 503, and the next run gets a new worker', async () => {
    const sandbox = await warmSandbox({ size: 1 });
    const waiting = holding(sandbox, 'lost', A);
    await waiting.held;
    // One long built-in call: the engine cannot stop it, so its worker is terminated.
    const stuck = runaway(sandbox, "return 'a'.repeat(2 ** 23).indexOf('a'.repeat(2 ** 13) + 'b')");
    await stuck.started;
    expect((await reactorFailure(stuck.promise)).message).toBe('Reactor exceeded its time limit of 1000 ms');
    expect(await reactorFailure(waiting.promise)).toMatchObject({
      kind: 'ServiceUnavailableError',
      status: 503,
      message: 'Reactor run ended: its worker was terminated to stop another run of the same application that passed its deadline; try again',
    });
    expect(sandbox.stats()).toMatchObject({ terminated: 1, running: 0 });
    waiting.release();
    const next = holding(sandbox, 'next', A);
    await next.held;
    next.release();
    await expect(next.promise).resolves.toMatchObject({ result: 'next' });
  });
});
