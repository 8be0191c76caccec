/**
 * Keeps a few prepared contexts (fresh runtime + context + prelude, no reactor code run yet) so a
 * run skips context creation and the prelude compile, about half a cold run's cost. A context is
 * handed out once and disposed by its run: never returned, never reused. Refills happen in
 * `setImmediate` turns, i.e. once the run that took a context has handed back control, before the
 * event loop waits for I/O again.
 *
 * The immediate is kept referenced on purpose. An unref'd immediate does not stop the event loop
 * from blocking in its poll phase, so it only ran once the next message had woken the loop, after
 * that message's run had already taken a context: in a worker that serves one run at a time, about
 * half the runs found the pool empty and prepared a context on their own latency (measured in
 * docs/performance.md, "Reactor worker pool"). A referenced immediate keeps the loop alive only
 * until the pool is full, a few hundred microseconds.
 */
import type { QuickJSWASMModule } from 'quickjs-emscripten';
import { isModuleFailure } from './module-failure.js';
import { PreparedContext, type PrepareOptions } from './prepared-context.js';

export interface ContextPoolOptions extends PrepareOptions {
  /** Prepared contexts kept ready; 0 disables the pool. */
  size: number;
  /** Called when preparing a context failed inside the WebAssembly module. */
  onModuleFailure: () => void;
}

export class ContextPool {
  readonly #module: QuickJSWASMModule;
  readonly #options: ContextPoolOptions;
  readonly #idle: PreparedContext[] = [];
  #refillScheduled = false;
  #closed = false;
  #onSettled: (() => void)[] = [];

  constructor(module: QuickJSWASMModule, options: ContextPoolOptions) {
    this.#module = module;
    this.#options = options;
    this.#scheduleRefill();
  }

  /** Prepared contexts ready to be taken. */
  get idle(): number {
    return this.#idle.length;
  }

  /** A prepared context for one run: from the pool when one is ready, else made now. */
  take(): PreparedContext {
    const ready = this.#idle.pop();
    this.#scheduleRefill();
    return ready ?? this.#prepare();
  }

  /** Resolves once the pool is full or has stopped refilling (for tests and warm-up). */
  filled(): Promise<void> {
    if (this.#closed || this.#idle.length >= this.#options.size) return Promise.resolve();
    return new Promise((resolve) => this.#onSettled.push(resolve));
  }

  /**
   * Stops refilling and drops the idle contexts without freeing them (their module is being
   * retired and may no longer be safe to call); returns how many were dropped.
   */
  close(): number {
    this.#closed = true;
    this.#settle();
    return this.#idle.splice(0).length;
  }

  #prepare(): PreparedContext {
    return PreparedContext.create(this.#module, this.#options);
  }

  #settle(): void {
    for (const resolve of this.#onSettled.splice(0)) resolve();
  }

  #scheduleRefill(): void {
    if (this.#refillScheduled) return;
    if (this.#closed || this.#idle.length >= this.#options.size) return this.#settle();
    this.#refillScheduled = true;
    setImmediate(() => {
      this.#refillScheduled = false;
      if (this.#closed || this.#idle.length >= this.#options.size) return this.#settle();
      try {
        this.#idle.push(this.#prepare());
      } catch (error) {
        if (isModuleFailure(error)) this.#options.onModuleFailure(); // retires the module, closing this pool
        else this.#closed = true;
        this.#settle();
        return;
      }
      this.#scheduleRefill();
    });
  }
}
