/** One worker thread of the pool (worker-pool.ts): what the pool tracks of it, and how it is started. */
import { Worker } from 'node:worker_threads';
import type { RunTask } from './run-task.js';
import type { RunOwner } from '../sandbox.js';
import type { FromWorker } from '../worker-protocol.js';

/** A worker not ready this long after it was started is given up (its waiting run fails with 503). */
const WORKER_START_TIMEOUT_MS = 30_000;

/** How a worker thread is started (part of the pool's options). */
export interface WorkerSpawnOptions {
  /** Old-generation heap limit of each worker's JavaScript side (host results and logs pass there), MiB. */
  heapMb: number;
  workerUrl: URL;
  /** Prepared contexts each worker's engine keeps ready. */
  contextPoolSize: number;
}

export class PoolWorker {
  /** Its runs: one, or several of one owner interleaved while they await the host (worker-placement.ts). */
  readonly tasks = new Set<RunTask>();
  /** Host calls each of its runs has posted and not had answered yet. */
  readonly #awaiting = new Map<RunTask, number>();
  ready = false;
  gone = false;
  /** Takes no more runs, and is retired once its runs have ended (its memory grew, worker-pool.ts). */
  draining = false;
  constructor(
    readonly worker: Worker,
    /** 0: a shared worker; d > 0: the extra worker of nesting depth d. */
    readonly lane: number,
  ) {}

  get idle(): boolean {
    return this.tasks.size === 0;
  }

  /** The owner of its runs (one owner at a time); undefined when idle or for runs without one. */
  get owner(): RunOwner | undefined {
    for (const task of this.tasks) return task.owner;
    return undefined;
  }

  /** Its run numbered `run`, if that run is on it. */
  find(run: number): RunTask | undefined {
    for (const task of this.tasks) if (task.id === run) return task;
    return undefined;
  }

  add(task: RunTask): void {
    this.tasks.add(task);
  }

  /** Takes `task` off this worker; returns whether it was on it. */
  remove(task: RunTask): boolean {
    this.#awaiting.delete(task);
    return this.tasks.delete(task);
  }

  /** `task` posted a host call (+1) or had one answered (-1). */
  hostCall(task: RunTask, delta: 1 | -1): void {
    if (this.tasks.has(task)) this.#awaiting.set(task, (this.#awaiting.get(task) ?? 0) + delta);
  }

  /**
   * Whether `task` may join this worker's runs now: the worker is started, holds fewer than
   * `runsPerWorker` runs, all of `task`'s owner, and every one of them is waiting for a host answer,
   * so the worker's thread is free (a run only posts its calls once it waits, sandbox-worker.ts).
   */
  accepts(task: RunTask, runsPerWorker: number): boolean {
    if (!this.ready || this.gone || this.draining || this.idle || this.tasks.size >= runsPerWorker) return false;
    if (!sameOwner(this.owner, task.owner)) return false;
    for (const run of this.tasks) if ((this.#awaiting.get(run) ?? 0) <= 0) return false;
    return true;
  }
}

/** Whether two runs count for the same owner (runs without one count as one owner). */
export function sameOwner(a: RunOwner | undefined, b: RunOwner | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.tenantId === b.tenantId && a.applicationId === b.applicationId;
}

/** What the pool does when one of its workers posts a message, or exits (`error` when it failed). */
export interface PoolWorkerEvents {
  onMessage(w: PoolWorker, message: FromWorker): void;
  onExit(w: PoolWorker, error: (Error & { code?: string }) | null): void;
}

/** Starts a worker thread of `lane`, unref'd until it is given a run. */
export function spawnPoolWorker(options: WorkerSpawnOptions, lane: number, events: PoolWorkerEvents): PoolWorker {
  const heapMb = options.heapMb;
  const worker = new Worker(options.workerUrl, {
    // The worker needs nothing from the environment or the command line of the host process.
    env: {},
    execArgv: [],
    workerData: { contextPoolSize: options.contextPoolSize },
    resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
  });
  worker.unref();
  const w = new PoolWorker(worker, lane);
  worker.on('message', (message: FromWorker) => events.onMessage(w, message));
  worker.on('error', (error: Error & { code?: string }) => events.onExit(w, error));
  worker.on('exit', () => events.onExit(w, null));
  // A run waiting for this worker has its deadline paused: bound the wait another way.
  setTimeout(() => {
    if (w.ready || w.gone) return;
    events.onExit(w, null);
    // eslint-disable-next-line @typescript-eslint/no-floating-promises -- Worker.terminate() does not reject: it resolves with the exit code (undefined once the worker is gone)
    void worker.terminate();
  }, WORKER_START_TIMEOUT_MS).unref();
  return w;
}
