/**
 * Shares of the worker pool (worker-pool.ts, run-queue.ts): while one owner floods the sandbox with
 * runs that spin until their deadline, another owner's run is served at once (a worker the flooder
 * may not take) or next (a pool of one), not after the flood; the flooder's excess is refused at
 * once; and a nested run counts as its top-level run's owner.
 *
 * Every wait is on an event (a host call reached, a run settled) or on what `stats()` says right
 * after a submit; the spinning runs have long deadlines and are ended by closing the sandbox, so no
 * assertion depends on how long anything took.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { createQuickJsSandbox, type QuickJsSandbox } from '../../src/sandbox/quickjs-sandbox.js';
import { resolveWorkerOptions } from '../../src/sandbox/pool/worker-options.js';
import type { RunOwner, SandboxRunInput } from '../../src/sandbox/sandbox.js';
import { deferred, reactorFailure } from './helpers.js';

const REQ = { args: null, configuration: {} };
const A: RunOwner = { tenantId: 't1', applicationId: 'flooder' };
const B: RunOwner = { tenantId: 't2', applicationId: 'bystander' };
/** Long enough never to be reached: the flood's runs spin until the sandbox closes. */
const SPIN_MS = 60_000;

const opened: QuickJsSandbox[] = [];
afterEach(async () => {
  for (const sandbox of opened.splice(0)) await sandbox.close();
});
async function warmSandbox(workers: Parameters<typeof createQuickJsSandbox>[0]): Promise<QuickJsSandbox> {
  const sandbox = await createQuickJsSandbox(workers);
  opened.push(sandbox);
  await sandbox.run({ code: 'module.exports = () => 0', req: REQ, host: { bt: null, fetch: null } });
  return sandbox;
}

/** Starts are recorded in `log` under `name` as each run reaches its reactor. */
function run(sandbox: QuickJsSandbox, log: string[], name: string, owner: RunOwner, body: string, extra: Partial<SandboxRunInput> = {}) {
  const started = deferred();
  const promise = sandbox.run({
    code: `module.exports = async (req) => { await req.bt.started(); ${body} }`,
    req: REQ,
    host: {
      fetch: null,
      bt: {
        started: async () => {
          log.push(name);
          started.resolve();
        },
        ...extra.host?.bt,
      },
    },
    limits: { timeoutMs: SPIN_MS },
    owner,
    ...(extra.limits ? { limits: extra.limits } : {}),
  });
  promise.catch(() => undefined);
  return { promise, started: started.promise };
}

describe('one owner flooding with spinning runs', () => {
  it("leaves a worker to another owner, whose run is served at once; the flood's excess is refused at once", async () => {
    // Shares by default: one application holds ceil(2 / 2) = 1 worker and queues ceil(8 / 4) = 2 runs.
    // One run per worker: with interleaving, a1 would join a0's worker while a0 awaits `started`
    // (worker-interleave.test.ts), and the counts below would be the interleaving's.
    const sandbox = await warmSandbox({ workers: { size: 2, maxQueued: 8, runsPerWorker: 1 } });
    const log: string[] = [];
    const flood = Array.from({ length: 5 }, (_, i) => run(sandbox, log, `a${i}`, A, 'for (;;) {}'));
    expect(sandbox.stats()).toMatchObject({ busy: 1, queued: 2 });
    for (const refused of flood.slice(3)) {
      expect(await reactorFailure(refused.promise)).toMatchObject({
        status: 503,
        message: 'This application already has 2 reactor runs waiting for a worker, its share of the queue; try again',
      });
    }
    await flood[0]!.started;

    const bystander = run(sandbox, log, 'b', B, 'return "b"');
    expect(sandbox.stats()).toMatchObject({ busy: 2, queued: 2 });
    await expect(bystander.promise).resolves.toMatchObject({ result: 'b' });
    expect(log).toEqual(['a0', 'b']);
    // Served while the flood still spins and waits.
    expect(sandbox.stats()).toMatchObject({ busy: 1, queued: 2 });
  });

  // One run per worker: with interleaving, the flood's first run would join the holder's worker
  // while it awaits the host (worker-interleave.test.ts), and the worker frees when both have ended.
  it("on a pool of one, serves another owner's run as soon as the worker is free, before the flood's queued runs", async () => {
    const sandbox = await warmSandbox({ workers: { size: 1, runsPerWorker: 1 } });
    const log: string[] = [];
    const release = deferred();
    const holder = run(sandbox, log, 'a0', A, 'await req.bt.hold(); return "a0"', { host: { fetch: null, bt: { hold: () => release.promise } } });
    await holder.started;
    const flood = Array.from({ length: 3 }, (_, i) => run(sandbox, log, `a${i + 1}`, A, 'for (;;) {}'));
    const bystander = run(sandbox, log, 'b', B, 'return "b"');
    expect(sandbox.stats()).toMatchObject({ busy: 1, queued: 4 });

    release.resolve();
    await expect(holder.promise).resolves.toMatchObject({ result: 'a0' });
    // Whichever comes first: the bystander's answer, or a flood run reaching its reactor before it.
    const first = await Promise.race([bystander.promise.then(() => 'b'), flood[0]!.started.then(() => 'a1')]);
    expect(first).toBe('b');
    expect(log).toEqual(['a0', 'b']);
  });
});

describe('nested runs and shares', () => {
  it("count as their top-level run's owner: a nested run naming another owner does not take that owner's worker", async () => {
    // One worker per application: the flooder's run holds one, its nested run (naming B) goes to
    // the extra worker of depth 1, so B's own run still finds the other shared worker free.
    const sandbox = await warmSandbox({ workers: { size: 2 } });
    const log: string[] = [];
    const nestedStarted = deferred();
    const finish = deferred();
    let nested: Promise<unknown> | undefined;
    const parent = run(sandbox, log, 'a', A, 'await req.bt.spawn(); const inner = await req.bt.join(); return "a+" + inner', {
      host: {
        fetch: null,
        bt: {
          spawn: async () => {
            nested = sandbox.run({
              code: 'module.exports = async (req) => { await req.bt.started(); await req.bt.wait(); return "nested" }',
              req: REQ,
              host: { fetch: null, bt: { started: async () => nestedStarted.resolve(), wait: () => finish.promise } },
              owner: B,
            });
            nested.catch(() => undefined);
          },
          join: async () => ((await nested!) as { result: unknown }).result,
        },
      },
    });
    await nestedStarted.promise;
    expect(sandbox.stats()).toMatchObject({ busy: 2, queued: 0 });
    const bystander = run(sandbox, log, 'b', B, 'return "b"');
    expect(sandbox.stats()).toMatchObject({ busy: 3, queued: 0 });
    await expect(bystander.promise).resolves.toMatchObject({ result: 'b' });
    finish.resolve();
    await expect(parent.promise).resolves.toMatchObject({ result: 'a+nested' });
  });
});

describe('share options', () => {
  it('follow the pool size and queue length unless given, and are checked once, at construction', async () => {
    expect(resolveWorkerOptions({ size: 8, maxQueued: 100 })).toMatchObject({
      maxRunningPerApplication: 4,
      maxRunningPerTenant: 6,
      maxQueuedPerApplication: 25,
      maxQueuedPerTenant: 50,
    });
    expect(resolveWorkerOptions({ size: 2, maxRunningPerApplication: 2 })).toMatchObject({ maxRunningPerApplication: 2, maxRunningPerTenant: 2 });
    expect(resolveWorkerOptions({ size: 1 })).toMatchObject({ maxRunningPerApplication: 1, maxRunningPerTenant: 1 });
    const error = await createQuickJsSandbox({ workers: { maxRunningPerApplication: 0 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(Object.keys((error as ValidationError).errors)).toEqual(['workers.maxRunningPerApplication']);
  });
});
