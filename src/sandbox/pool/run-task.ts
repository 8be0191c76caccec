/**
 * One reactor run as the main thread tracks it: its deadline, the worker it runs on, and the runs
 * it started through `req.bt` (nested `bt.reactors.react` calls).
 *
 * Host calls made for a run execute inside `runScope.run(task, ...)`, so a sandbox run started from
 * one of them (a nested reactor) finds its parent with `currentRun()`, however many awaits lie
 * between (detokenizing, loading the reactor). The child then inherits what is left of the parent's
 * deadline and is cancelled when the parent ends: a nested run can neither outlive its caller nor
 * get a fresh budget.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ReactorError } from '../../errors/errors.js';
import type { ApiEntry } from '../bridge.js';
import { runtimeError, timeoutError } from '../reactor-outcome.js';
import type { RunOwner, SandboxLimits, SandboxRunInput, SandboxRunOutput } from '../sandbox.js';

const runScope = new AsyncLocalStorage<RunTask>();

/** How long past its deadline a run's worker may take to report the timeout before it is terminated. */
export const KILL_GRACE_MS = 100;

/** The run on whose behalf the current host call executes, if any. */
export function currentRun(): RunTask | undefined {
  return runScope.getStore();
}

export function cancelledError(): ReactorError {
  return runtimeError('Reactor run cancelled: the reactor that called it has ended');
}

export type TaskState = 'queued' | 'running' | 'done';

export class RunTask {
  state: TaskState = 'queued';
  /** Set while running: ends the run now (terminating its worker if it is on one). */
  abort: ((error: ReactorError) => void) | null = null;
  readonly children = new Set<RunTask>();
  readonly depth: number;
  /**
   * Whose share of the workers the run uses (worker-pool.ts): the top-level run's owner for every run
   * of its tree, whatever owner a nested run names. A nested run is part of its caller's invocation
   * (and may act as another application: the reactor's own), so its caller's owner pays for it.
   */
  readonly owner: RunOwner | undefined;
  readonly promise: Promise<SandboxRunOutput>;
  #resolve!: (output: SandboxRunOutput) => void;
  #reject!: (error: unknown) => void;
  #onDone: (() => void)[] = [];

  /** The pending deadline timer (armDeadline); the pool clears it while the run waits for its worker to start. */
  timer: ReturnType<typeof setTimeout> | undefined;
  #deadline: number;

  /**
   * @param deadline performance.now() time after which the run fails with a timeout; already
   *   capped at the parent's deadline.
   */
  constructor(
    readonly id: number,
    readonly input: SandboxRunInput,
    readonly limits: SandboxLimits,
    readonly api: Map<string, ApiEntry> | null,
    /** `{ args, configuration }` as JSON text. */
    readonly reqJson: string,
    deadline: number,
    readonly parent: RunTask | null,
  ) {
    this.#deadline = deadline;
    this.depth = parent === null ? 0 : parent.depth + 1;
    this.owner = parent === null ? input.owner : parent.owner;
    this.promise = new Promise<SandboxRunOutput>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    parent?.children.add(this);
  }

  /** performance.now() time after which the run fails with a timeout. */
  get deadline(): number {
    return this.#deadline;
  }

  /**
   * Moves the deadline later by time the run spent waiting for its worker to start, which is the
   * sandbox's cost, not the reactor's; never past the parent's deadline.
   */
  extendDeadline(ms: number): void {
    this.#deadline = Math.min(this.#deadline + Math.max(0, ms), this.parent?.deadline ?? Number.POSITIVE_INFINITY);
  }

  /**
   * (Re)starts the deadline timer, from now to the deadline; the pool arms it when the run is
   * submitted and again once its worker is ready (worker-pool.ts). A queued run fails with a
   * timeout at the deadline. A running one is stopped by the engine in its worker itself; if it has
   * not reported back within KILL_GRACE_MS, it cannot (one long built-in call), and the run is
   * cancelled, which terminates its worker.
   */
  armDeadline(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        if (this.state === 'queued') return this.fail(timeoutError(this.limits));
        this.timer = setTimeout(() => this.cancel(timeoutError(this.limits)), KILL_GRACE_MS);
      },
      Math.max(0, this.#deadline - performance.now()),
    );
  }

  get done(): boolean {
    return this.state === 'done';
  }

  /** Runs a host function of this run so that runs it starts are this run's children. */
  inScope<T>(fn: () => T): T {
    return runScope.run(this, fn);
  }

  /** Calls `fn` once the run has ended (immediately if it has). */
  onDone(fn: () => void): void {
    if (this.done) fn();
    else this.#onDone.push(fn);
  }

  succeed(output: SandboxRunOutput): void {
    if (this.#end()) this.#resolve(output);
  }

  fail(error: unknown): void {
    if (this.#end()) this.#reject(error);
  }

  /** Ends the run with `error` wherever it is: dropped from its queue or its worker terminated. */
  cancel(error: ReactorError): void {
    if (this.done) return;
    if (this.abort !== null) this.abort(error);
    else this.fail(error);
  }

  #end(): boolean {
    if (this.done) return false;
    this.state = 'done';
    this.abort = null;
    clearTimeout(this.timer);
    this.parent?.children.delete(this);
    for (const fn of this.#onDone.splice(0)) fn();
    // A nested run still in flight cannot be used by anyone once its caller has ended.
    for (const child of [...this.children]) child.cancel(cancelledError());
    return true;
  }
}
