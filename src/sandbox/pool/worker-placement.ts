/**
 * Which worker a run starts on (worker-pool.ts): the pool's placement decision, kept apart from the
 * pool's lifecycle (messages, deadlines, exits, retirement) because it is a pure choice over the
 * workers alive now, and the order of its preferences is the pool's fairness; the pool only acts on
 * the answer (start the run there, or queue it).
 *
 * Preferences, first that applies:
 * 1. An idle shared worker, if the run's owner may hold one more (its share, worker-shares.ts).
 * 2. Interleaving. A started shared worker the run may join: a top-level run that finds no idle
 *    worker it may take, while no run waits in the queue, joins a shared worker whose runs are all of
 *    its owner and all awaiting a host answer (their `req.bt` calls or fetches are out), up to
 *    `runsPerWorker` runs: the worker's thread is free, and the new run uses it instead of a worker
 *    start or a wait. Runs of that owner already waiting go first: the pool hands the worker the
 *    oldest of them as soon as its runs all await the host, while no other owner's run waits
 *    (worker-pool.ts, `#join`). It takes no share: its owner holds that worker already, and a run of
 *    another owner that arrives finds the queue as before (once it waits, nothing joins, so the
 *    worker frees as its runs end). The cost stays the owner's: a run that spins delays the other runs on its
 *    worker until the engine stops it at its deadline, and when its worker must be terminated, the
 *    other runs on it fail with 503 (they may have called the host, so they are not retried).
 * 3. A new shared worker, if the pool has room and the owner its share.
 * 4. For a nested run only (started from a `req.bt` call of a running reactor, run-task.ts), when
 *    the shared workers are all busy or its tree's owner holds its share of them: the extra worker
 *    of its nesting depth, idle or new, which counts in no share. Its parent holds a worker while it
 *    waits, so without it a pool of size 1 would deadlock on the first nested call; with it the
 *    deepest run can always proceed.
 */
import type { PoolWorker } from './pool-worker.js';
import type { RunTask } from './run-task.js';
import type { SandboxWorkerOptions } from './worker-options.js';
import { mayHoldShared } from './worker-shares.js';

/** Workers each nesting depth may add beyond the pool size while the shared workers are busy. */
const EXTRA_WORKERS_PER_DEPTH = 1;

/** What the placement decision reads of the pool, and how it starts a worker. */
export interface PoolView {
  workers: Iterable<PoolWorker>;
  options: Pick<SandboxWorkerOptions, 'size' | 'runsPerWorker' | 'maxRunningPerApplication' | 'maxRunningPerTenant'>;
  /** Runs waiting in the queue: while any do, no run joins a busy worker. */
  queued: number;
  /** Starts a worker of `lane` and adds it to the pool's workers; may throw (the run fails with 503). */
  spawn(lane: number): PoolWorker;
}

/** The worker `task` starts on now, possibly a new one; null when it must wait in the queue. */
export function placeRun(pool: PoolView, task: RunTask): PoolWorker | null {
  const shared = mayHoldShared(pool.workers, pool.options, task);
  return (
    (shared ? idleWorker(pool.workers, 0) : null) ??
    joinable(pool, task) ??
    (shared ? spawnIfRoom(pool, 0) : null) ??
    (task.depth > 0 ? (idleWorker(pool.workers, task.depth) ?? spawnIfRoom(pool, task.depth)) : null)
  );
}

/** An idle worker of `lane`. */
export function idleWorker(workers: Iterable<PoolWorker>, lane: number): PoolWorker | null {
  for (const w of workers) if (w.lane === lane && w.idle) return w;
  return null;
}

/** A new worker of `lane` when the lane has room. */
export function spawnIfRoom(pool: Pick<PoolView, 'workers' | 'options' | 'spawn'>, lane: number): PoolWorker | null {
  let count = 0;
  for (const w of pool.workers) if (w.lane === lane) count++;
  const room = lane === 0 ? pool.options.size : EXTRA_WORKERS_PER_DEPTH;
  return count < room ? pool.spawn(lane) : null;
}

/** A shared worker `task` may join (Interleaving above); never while runs wait in the queue. */
function joinable(pool: PoolView, task: RunTask): PoolWorker | null {
  if (task.depth > 0 || pool.queued > 0) return null;
  for (const w of pool.workers) if (w.lane === 0 && w.accepts(task, pool.options.runsPerWorker)) return w;
  return null;
}
