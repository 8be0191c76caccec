/** One worker thread of the pool (worker-pool.ts): what the pool tracks of it, and how it is started. */
import { Worker } from 'node:worker_threads';
import type { RunTask } from './run-task.js';
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
  task: RunTask | null = null;
  ready = false;
  gone = false;
  /** When the run given to this worker before it was ready started waiting for it. */
  startWaitedAt = 0;
  constructor(
    readonly worker: Worker,
    /** 0: a shared worker; d > 0: the extra worker of nesting depth d. */
    readonly lane: number,
  ) {}
}

/** What the pool does when one of its workers posts a message, or exits (`error` when it failed). */
export interface PoolWorkerEvents {
  onMessage(w: PoolWorker, message: FromWorker): void;
  onExit(w: PoolWorker, error: (Error & { code?: string }) | null): void;
}

/** Starts a worker thread of `lane`, unref'd until it is given a run. */
export function spawnPoolWorker(
  options: WorkerSpawnOptions,
  lane: number,
  events: PoolWorkerEvents,
): PoolWorker {
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
    void worker.terminate();
  }, WORKER_START_TIMEOUT_MS).unref();
  return w;
}
