/**
 * The expression time one service call may spend.
 *
 * Each render is capped on its own (RENDER_LIMIT_MS), but one call renders many templates: a create
 * renders its id, fingerprint and up to 100 search indexes, a tokenize call does that for up to 100
 * tokens, and a list page renders a mask per item. Without a total, one request could block the
 * event loop for (templates × per-render cap). A service creates one ExpressionBudget per call and
 * passes it to every render of that call. The budget adds up the time spent inside those renders,
 * not the time since the call began: what runs between them (store reads, other requests served at
 * an await) is not the call's expression cost, and counting it made ordinary pages fail on a busy
 * machine. A render asked for once the total has reached the limit fails instead of running, so a
 * call's expressions stop within its budget plus at most one render.
 *
 * Time comes from a monotonic source (performance.now by default), never from the vault Clock: the
 * Clock is domain time (a ManualClock in tests, and the system clock can jump). Tests inject a
 * source that moves only when read, which makes the cap deterministic.
 */
import { ValidationError } from '../errors/errors.js';

/** A monotonic time source, in milliseconds. */
export type MonotonicNow = () => number;

/**
 * Expression time of one service call by default, in ms. Ordinary calls use well under 1 ms (README,
 * Expressions). Wall time counts whatever happens during a render, a GC pause or the process being
 * descheduled included: at 100 ms, a masked page of 20 cards failed about 2 times in 10,000 on a
 * 2-core machine running four test suites (test/bench/expressions-worst.mjs, hot path), so the
 * default leaves room for that.
 */
export const DEFAULT_REQUEST_BUDGET_MS = 250;

export const performanceNow: MonotonicNow = () => performance.now();

/**
 * The rendering time of one service call.
 * @example
 * const budget = new ExpressionBudget(100);
 * engine.render('{{ data | last4 }}', { data }, 'search_indexes[0]', budget);
 */
export class ExpressionBudget {
  readonly limitMs: number;
  readonly #now: MonotonicNow;
  #spentMs = 0;
  #exhausted = false;

  constructor(limitMs: number = DEFAULT_REQUEST_BUDGET_MS, now: MonotonicNow = performanceNow) {
    this.limitMs = limitMs;
    this.#now = now;
  }

  /** True once a render was refused because the time was used up. */
  get exhausted(): boolean {
    return this.#exhausted;
  }

  /**
   * Runs one render and adds its time to the total. Throws ValidationError.field(field, …) instead
   * of running it once the total has reached the limit, so the call fails as a whole (services
   * render before they write, so nothing is changed).
   */
  run<T>(field: string, render: () => T): T {
    if (this.#exhausted || this.#spentMs >= this.limitMs) {
      this.#exhausted = true;
      throw ValidationError.field(field, `was not rendered: the expressions of this request used up their ${this.limitMs} ms of rendering time`);
    }
    const started = this.#now();
    try {
      return render();
    } finally {
      this.#spentMs += this.#now() - started;
    }
  }
}
