/**
 * The Sandbox the vault uses: reactor code runs in QuickJS engines inside a pool of worker threads
 * (worker-pool.ts), never on the thread that serves requests, and a run past its deadline is ended
 * by terminating its worker. Host capabilities (`req.bt`, `fetch`) stay on this thread; the worker
 * calls them over its message channel and values cross as JSON.
 *
 * `check` compiles on this thread, in an engine of its own: it never runs code, and it must answer
 * synchronously (quickjs-engine.ts bounds it and survives a parser that exhausts the stack).
 */
import { ValidationError } from '../errors/errors.js';
import { flattenApiTree } from './bridge.js';
import { createQuickJsEngine, type QuickJsEngine } from './engine/quickjs-engine.js';
import { resolveLimits } from './limits.js';
import { runtimeError } from './reactor-outcome.js';
import { cancelledError, currentRun, RunTask } from './pool/run-task.js';
import { DEFAULT_SANDBOX_LIMITS, MAX_CODE_BYTES, type Sandbox, type SandboxLimits, type SandboxRunInput, type SandboxRunOutput } from './sandbox.js';
import { resolveWorkerFile } from './worker-file.js';
import { type RunTimes, WorkerPool, type WorkerPoolStats } from './pool/worker-pool.js';
import { resolveWorkerOptions, type SandboxWorkerOptions } from './pool/worker-options.js';

const MIB = 1024 * 1024;

export interface QuickJsSandboxOptions {
  /** Defaults for every run; a run may override them. */
  limits?: Partial<SandboxLimits>;
  workers?: Partial<SandboxWorkerOptions>;
  /** Prepared contexts each worker keeps ready for its next run (default 1; 0 disables; quickjs-engine.ts). */
  poolSize?: number;
  /**
   * The worker thread's code: a path or file: URL of tokenvault's `sandbox-worker.js` (default: the
   * one beside tokenvault's code). Set it when tokenvault is bundled (docs/bundling.md).
   */
  workerFile?: string | URL;
  /** Told of each run's time waiting for a worker and running, as it ends (metrics; worker-pool.ts). */
  onRunTimes?: (times: RunTimes) => void;
}

export class QuickJsSandbox implements Sandbox {
  readonly limits: SandboxLimits;
  readonly workers: SandboxWorkerOptions;
  readonly #checker: QuickJsEngine;
  readonly #pool: WorkerPool;
  #nextRun = 0;

  /** Use `createQuickJsSandbox`. */
  constructor(checker: QuickJsEngine, limits: SandboxLimits, workers: SandboxWorkerOptions, contextPoolSize: number, workerUrl: URL, onRunTimes?: (times: RunTimes) => void) {
    this.limits = limits;
    this.workers = workers;
    this.#checker = checker;
    this.#pool = new WorkerPool({
      ...workers,
      // Host results up to the run's memory limit pass through the worker's heap as JSON text.
      heapMb: Math.max(128, Math.ceil((3 * limits.memoryBytes) / MIB)),
      workerUrl,
      contextPoolSize,
      ...(onRunTimes ? { onRunTimes } : {}),
    });
  }

  check(code: string): void {
    this.#checker.check(code);
  }

  run(input: SandboxRunInput): Promise<SandboxRunOutput> {
    try {
      assertCode(input.code);
      let limits = resolveLimits(this.limits, input.limits);
      const parent = currentRun() ?? null;
      if (parent?.done) throw cancelledError();
      // A nested run gets what is left of its caller's time at most; its timeout error says so.
      const now = performance.now();
      if (parent !== null && parent.deadline - now < limits.timeoutMs) {
        limits = Object.freeze({ ...limits, timeoutMs: Math.max(1, Math.floor(parent.deadline - now)) });
      }
      const api = input.host.bt === null ? null : flattenApiTree(input.host.bt);
      let reqJson: string;
      try {
        reqJson = JSON.stringify({ ...input.req, args: input.req.args ?? null, configuration: input.req.configuration ?? {} });
      } catch {
        throw runtimeError('Reactor arguments are not JSON');
      }
      const task = new RunTask(++this.#nextRun, input, limits, api, reqJson, parent);
      this.#pool.submit(task);
      return task.promise;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Starts a worker ahead of the first run. */
  warm(): void {
    this.#pool.warm();
  }

  /** Worker pool counters, for tests and monitoring. */
  stats(): WorkerPoolStats {
    return this.#pool.stats();
  }

  /** Terminates the workers; runs in progress or queued fail with 503. */
  close(): Promise<void> {
    return this.#pool.close();
  }
}

function assertCode(code: unknown): asserts code is string {
  if (typeof code !== 'string') throw runtimeError('Reactor code must be a string');
  if (Buffer.byteLength(code) > MAX_CODE_BYTES) throw runtimeError(`Reactor code must be at most ${MAX_CODE_BYTES} bytes`);
}

/**
 * Creates the worker-thread sandbox. Workers start on demand; call `close()` to end them.
 * @example const sandbox = await createQuickJsSandbox({ limits: { timeoutMs: 5_000 }, workers: { size: 4 } });
 */
export async function createQuickJsSandbox(options?: QuickJsSandboxOptions): Promise<QuickJsSandbox> {
  const limits = resolveLimits(DEFAULT_SANDBOX_LIMITS, options?.limits);
  const workers = resolveWorkerOptions(options?.workers);
  const contextPoolSize = options?.poolSize ?? 1;
  if (!Number.isInteger(contextPoolSize) || contextPoolSize < 0 || contextPoolSize > 64) {
    throw new ValidationError({ poolSize: ['must be an integer from 0 to 64'] });
  }
  const workerUrl = resolveWorkerFile(options?.workerFile, 'workerFile');
  const checker = await createQuickJsEngine({ limits, poolSize: 0 });
  const sandbox = new QuickJsSandbox(checker, limits, workers, contextPoolSize, workerUrl, options?.onRunTimes);
  sandbox.warm();
  return sandbox;
}
