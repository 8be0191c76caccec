/** Options of the sandbox's worker pool (worker-pool.ts): defaults and ranges, checked once. */
import { availableParallelism } from 'node:os';
import * as v from 'valibot';
import { validationFromIssues } from '../validation/issues.js';

const MIB = 1024 * 1024;

/** Options of the worker pool; each has a default (defaultWorkerOptions). */
export interface SandboxWorkerOptions {
  /** Worker threads running reactors at once. Default max(2, available cores). */
  size: number;
  /** Top-level runs that may wait for a worker; beyond that a run fails at once with 503. Default 256. */
  maxQueued: number;
  /** A worker whose WebAssembly memory grew past this during a run is replaced after it. Default 32 MiB (a fresh one has 16). */
  recycleAboveBytes: number;
}

export function defaultWorkerOptions(): SandboxWorkerOptions {
  return { size: Math.max(2, availableParallelism()), maxQueued: 256, recycleAboveBytes: 32 * MIB };
}

const integerIn = (min: number, max: number) => v.optional(v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max)));
const WorkerOptionsSchema = v.strictObject({
  size: integerIn(1, 256),
  maxQueued: integerIn(0, 100_000),
  recycleAboveBytes: integerIn(16 * MIB, 4096 * MIB),
});

/**
 * Applies worker option overrides to the defaults after checking their ranges.
 * @throws ValidationError keyed `workers.<name>`.
 */
export function resolveWorkerOptions(overrides: Partial<SandboxWorkerOptions> | undefined): SandboxWorkerOptions {
  const parsed = v.safeParse(WorkerOptionsSchema, overrides ?? {});
  if (!parsed.success) throw validationFromIssues(parsed.issues, 'workers');
  const out = defaultWorkerOptions();
  for (const key of Object.keys(out) as (keyof SandboxWorkerOptions)[]) {
    const value = parsed.output[key];
    if (value !== undefined) out[key] = value;
  }
  return Object.freeze(out);
}

