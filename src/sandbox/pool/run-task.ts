/**
 * One reactor run as the main thread tracks it: its deadline, the worker it runs on, and the runs
 * it started through `req.bt` (nested `bt.reactors.react` calls).
 *
 * Host calls made for a run execute inside `runScope.run(task, ...)`, so a sandbox run started from
 * one of them (a nested reactor) finds its parent with `currentRun()`, however many awaits lie
 * between (detokenizing, loading the reactor). The child then inherits what is left of the parent's
 * deadline and is cancelled when the parent ends: a nested run can neither outlive its caller nor
 * get a fresh budget.
 *
 * Queue time is not run time: a run's time limit starts when it is handed to its worker (`begin`),
 * not when it is submitted. Waiting for a worker is bounded on its own (`awaitWorker`): a run still
 * waiting after `maxQueueWaitMs` fails with a 503 ServiceUnavailableError and Retry-After, never
 * with the time limit's error, since none of its code ran.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { type ReactorError, ServiceUnavailableError } from '../../errors/errors.js';
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

  /** The pending timer: the queue-wait bound while queued, the deadline once begun. */
  timer: ReturnType<typeof setTimeout> | undefined;
  #deadline = Number.POSITIVE_INFINITY;
  /** performance.now() when submitted, and when handed to its worker (NaN until then). */
  readonly submittedAt = performance.now();
  startedAt = Number.NaN;

  /**
   * The deadline is set by `begin`: `limits.timeoutMs` from then, capped at the parent's deadline
   * (a nested run's limits are already cut to what its caller had left when it was submitted).
   */
  constructor(
    readonly id: number,
    readonly input: SandboxRunInput,
    readonly limits: SandboxLimits,
    readonly api: Map<string, ApiEntry> | null,
    /** `{ args, configuration }` as JSON text. */
    readonly reqJson: string,
    readonly parent: RunTask | null,
  ) {
    this.depth = parent === null ? 0 : parent.depth + 1;
    this.owner = parent === null ? input.owner : parent.owner;
    this.promise = new Promise<SandboxRunOutput>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    parent?.children.add(this);
  }

  /** performance.now() time after which the run fails with a timeout; infinite until it begins. */
  get deadline(): number {
    return this.#deadline;
  }

  /** Milliseconds from submission to its worker taking it (NaN while it has not). */
  get queuedMs(): number {
    return this.startedAt - this.submittedAt;
  }

  /**
   * Bounds the wait for a worker: still queued `maxWaitMs` from now, the run fails with a 503 and
   * Retry-After (the queue wait is the sandbox's, not the reactor's; nothing of it ran).
   */
  awaitWorker(maxWaitMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.state !== 'queued') return;
      this.fail(new ServiceUnavailableError(`No reactor worker was free within ${maxWaitMs} ms; try again`, Math.max(1, Math.ceil(maxWaitMs / 1000))));
    }, maxWaitMs);
  }

  /**
   * The run is handed to its worker now: its time limit starts, and the deadline timer with it.
   * The engine in the worker stops the run at the deadline itself; if it has not reported back
   * within KILL_GRACE_MS, it cannot (one long built-in call), and the run is cancelled, which
   * terminates its worker. Returns the budget left (ms): less than 1 only for a nested run whose
   * caller's time is up.
   */
  begin(): number {
    const now = performance.now();
    this.startedAt = now;
    this.#deadline = Math.min(now + this.limits.timeoutMs, this.parent?.deadline ?? Number.POSITIVE_INFINITY);
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        this.timer = setTimeout(() => this.cancel(timeoutError(this.limits)), KILL_GRACE_MS);
      },
      Math.max(0, this.#deadline - now),
    );
    return this.#deadline - now;
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
