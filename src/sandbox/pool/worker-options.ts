/** Options of the sandbox's worker pool (worker-pool.ts): defaults and ranges, checked once. */
import { availableParallelism } from 'node:os';
import * as v from 'valibot';
import { validationFromIssues } from '../../validation/issues.js';

const MIB = 1024 * 1024;

/**
 * Options of the worker pool; each has a default (defaultWorkerOptions). The four share caps bound
 * what one run owner (SandboxRunInput.owner: a tenant, an application of it) may hold, so that one
 * owner's flood leaves workers and queue room to the others (docs/reactors.md). Runs without an
 * owner have no caps.
 */
export interface SandboxWorkerOptions {
  /** Worker threads running reactors at once. Default max(2, available cores). */
  size: number;
  /** Top-level runs that may wait for a worker; beyond that a run fails at once with 503. Default 256. */
  maxQueued: number;
  /** A worker whose WebAssembly memory grew past this during a run is replaced after it. Default 32 MiB (a fresh one has 16). */
  recycleAboveBytes: number;
  /**
   * Shared workers one application may hold at once, even when the others are idle: a worker can
   * only be handed over when its run ends, so the room another application finds at once is the
   * room no single one may take. Default max(1, ceil(size / 2)).
   */
  maxRunningPerApplication: number;
  /** Shared workers the applications of one tenant may hold at once. Default ceil(3 × size / 4): a quarter of the pool stays for other tenants (none at size 2 or 3). */
  maxRunningPerTenant: number;
  /** Runs of one application that may wait for a worker; beyond that its runs fail at once with 503. Default ceil(maxQueued / 4). */
  maxQueuedPerApplication: number;
  /** Runs of one tenant's applications that may wait for a worker. Default ceil(maxQueued / 2). */
  maxQueuedPerTenant: number;
  /**
   * Runs of one owner a worker may hold at once: while every run on a worker awaits the host (a
   * `req.bt` call, `fetch`), and no other owner's run is waiting, the worker takes another run of
   * that owner instead of sitting idle. 1 keeps one run per worker. Default 4.
   */
  runsPerWorker: number;
  /**
   * How long a run may wait in the queue for a worker; past that it fails with 503 and Retry-After.
   * The wait is not part of the run's time limit, which starts when its worker takes it. Default
   * 10 000 (the default time limit: a run waits no longer than it could have run).
   */
  maxQueueWaitMs: number;
}

/** The share caps' defaults, which follow `size` and `maxQueued`. */
function defaultShares(size: number, maxQueued: number) {
  return {
    maxRunningPerApplication: Math.max(1, Math.ceil(size / 2)),
    maxRunningPerTenant: Math.max(1, Math.ceil((3 * size) / 4)),
    maxQueuedPerApplication: Math.ceil(maxQueued / 4),
    maxQueuedPerTenant: Math.ceil(maxQueued / 2),
  };
}

export function defaultWorkerOptions(): SandboxWorkerOptions {
  const size = Math.max(2, availableParallelism());
  const maxQueued = 256;
  return { size, maxQueued, recycleAboveBytes: 32 * MIB, runsPerWorker: 4, maxQueueWaitMs: 10_000, ...defaultShares(size, maxQueued) };
}

const integerIn = (min: number, max: number) => v.optional(v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max)));
const WorkerOptionsSchema = v.strictObject({
  size: integerIn(1, 256),
  maxQueued: integerIn(0, 100_000),
  recycleAboveBytes: integerIn(16 * MIB, 4096 * MIB),
  maxRunningPerApplication: integerIn(1, 256),
  maxRunningPerTenant: integerIn(1, 256),
  maxQueuedPerApplication: integerIn(0, 100_000),
  maxQueuedPerTenant: integerIn(0, 100_000),
  runsPerWorker: integerIn(1, 64),
  maxQueueWaitMs: integerIn(1, 600_000),
});

/**
 * Applies worker option overrides to the defaults after checking their ranges. The share caps not
 * given follow the resolved `size` and `maxQueued`.
 * @throws ValidationError keyed `workers.<name>`.
 */
export function resolveWorkerOptions(overrides: Partial<SandboxWorkerOptions> | undefined): SandboxWorkerOptions {
  const parsed = v.safeParse(WorkerOptionsSchema, overrides ?? {});
  if (!parsed.success) throw validationFromIssues(parsed.issues, 'workers');
  const given = parsed.output;
  const base = defaultWorkerOptions();
  const size = given.size ?? base.size;
  const maxQueued = given.maxQueued ?? base.maxQueued;
  const out: SandboxWorkerOptions = { ...base, size, maxQueued, ...defaultShares(size, maxQueued) };
  for (const key of Object.keys(out) as (keyof SandboxWorkerOptions)[]) {
    const value = given[key];
    if (value !== undefined) out[key] = value;
  }
  return Object.freeze(out);
}
