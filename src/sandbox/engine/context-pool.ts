/**
 * Keeps a few prepared contexts (fresh runtime + context + prelude, no reactor code run yet) so a
 * run skips context creation and the prelude compile, about half a cold run's cost; and frees the
 * contexts of ended runs after the run's result has gone out, so freeing is not on its latency
 * either. A context is handed out once and freed after its run: never returned, never reused.
 *
 * The work happens in `setImmediate` turns, i.e. once the run that took a context has handed back
 * control (the worker has posted its result), before the event loop waits for I/O again: each turn
 * frees the ended runs' contexts first (the fresh context then reuses their memory, and a run that
 * used much of it never holds it past that turn), then prepares one context. Runs that end within
 * one turn (interleaved runs) leave at most MAX_UNFREED contexts waiting; past that a context is
 * freed at once.
 *
 * In a worker thread that turn does not always come before the next run: the MessagePort hands its
 * handler every message that has arrived before the loop gets to its immediates, and on a loaded
 * machine the next run's message usually has (the worker loses its core when it posts a result, and
 * gets it back after the main thread has answered). One call at a time, the prepared context
 * was there for few runs. Preparing it in the handler right after posting the result makes it
 * there for every run, but the next message then waits for the preparation instead, and the
 * latency did not change (docs/performance.md, "Reactor pool, third round"). What the pool saves a run is
 * the time its worker was idle before it, no more.
 *
 * The immediate is kept referenced on purpose. An unref'd immediate does not stop the event loop
 * from blocking in its poll phase, so it only ran once the next message had woken the loop, after
 * that message's run had already taken a context: in a worker that serves one run at a time, many
 * runs found the pool empty and prepared a context on their own latency (measured in
 * docs/performance.md, "Reactor worker pool"). A referenced immediate keeps the loop alive only
 * until that work is done, a few hundred microseconds.
 */
import type { QuickJSWASMModule } from 'quickjs-emscripten';
import { isModuleFailure } from './module-failure.js';
import { PreparedContext, type PrepareOptions } from './prepared-context.js';

/** Contexts of ended runs that may wait for an idle turn to be freed. */
export const MAX_UNFREED = 4;

export interface ContextPoolOptions extends PrepareOptions {
  /** Prepared contexts kept ready; 0 disables the pool (ended runs' contexts are still freed in idle turns). */
  size: number;
  /** Called when preparing or freeing a context failed inside the WebAssembly module. */
  onModuleFailure: () => void;
}

export class ContextPool {
  readonly #module: QuickJSWASMModule;
  readonly #options: ContextPoolOptions;
  readonly #idle: PreparedContext[] = [];
  /** Contexts whose runs have ended, waiting to be freed. */
  readonly #ended: PreparedContext[] = [];
  #scheduled = false;
  #closed = false;
  /** Preparing failed for a reason other than the module: stop refilling (each run prepares its own). */
  #refillBroken = false;
  #onSettled: (() => void)[] = [];

  constructor(module: QuickJSWASMModule, options: ContextPoolOptions) {
    this.#module = module;
    this.#options = options;
    this.#schedule();
  }

  /** Prepared contexts ready to be taken. */
  get idle(): number {
    return this.#idle.length;
  }

  /** A prepared context for one run: from the pool when one is ready, else made now. */
  take(): PreparedContext {
    const ready = this.#idle.pop();
    this.#schedule();
    return ready ?? this.#prepare();
  }

  /**
   * Takes back the context of an ended run (its run's handles already freed) to free it in an idle
   * turn. It is never handed out again. A closed pool frees it now, as does a full backlog.
   * @throws a module failure while freeing it now (the caller retires the module).
   */
  release(used: PreparedContext): void {
    if (this.#closed || this.#ended.length >= MAX_UNFREED) return used.dispose();
    this.#ended.push(used);
    this.#schedule();
  }

  /** Resolves once the pool is full and every ended run's context is freed, or the pool has stopped (for tests and warm-up). */
  filled(): Promise<void> {
    if (!this.#hasWork()) return Promise.resolve();
    return new Promise((resolve) => this.#onSettled.push(resolve));
  }

  /**
   * Stops refilling and drops the idle and ended contexts without freeing them (their module is
   * being retired and may no longer be safe to call); returns how many were dropped.
   */
  close(): number {
    this.#closed = true;
    this.#settle();
    return this.#idle.splice(0).length + this.#ended.splice(0).length;
  }

  #prepare(): PreparedContext {
    return PreparedContext.create(this.#module, this.#options);
  }

  #needsRefill(): boolean {
    return !this.#refillBroken && this.#idle.length < this.#options.size;
  }

  #hasWork(): boolean {
    return !this.#closed && (this.#needsRefill() || this.#ended.length > 0);
  }

  #settle(): void {
    for (const resolve of this.#onSettled.splice(0)) resolve();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    if (!this.#hasWork()) return this.#settle();
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (!this.#hasWork()) return this.#settle();
      try {
        // One at a time off the list: a context whose free fails is abandoned by onModuleFailure,
        // the rest by close().
        while (this.#ended.length > 0) this.#ended.shift()!.dispose();
        if (this.#needsRefill()) this.#refillOne();
      } catch {
        // The module failed under us (or freeing failed, which leaves it in a state not to trust):
        // retire it, which closes this pool.
        this.#options.onModuleFailure();
        return this.#settle();
      }
      this.#schedule();
    });
  }

  #refillOne(): void {
    try {
      this.#idle.push(this.#prepare());
    } catch (error) {
      if (isModuleFailure(error)) throw error;
      this.#refillBroken = true;
    }
  }
}
