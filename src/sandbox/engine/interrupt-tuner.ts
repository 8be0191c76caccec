/**
 * Makes QuickJS check the deadline every few "ticks" instead of every 10,000.
 *
 * QuickJS calls the interrupt handler when a per-context counter, decremented at each function call
 * and loop back-edge, reaches zero; it then resets it to 10,000. A tick can be one expensive
 * built-in call, so 10,000 ticks can be minutes: measured here, `for (;;) a.sort()` on a
 * 20,000-element array ran 55 s past a 300 ms deadline, blocking Node's event loop all along.
 *
 * quickjs-emscripten exposes no way to change the counter, so the handler writes it directly in the
 * WebAssembly memory: at most MAX_TICKS_BETWEEN_CHECKS, down to 1 as soon as ticks turn slow. The
 * deadline can then be overrun by at most that many ticks, i.e. a few built-in calls, each bounded
 * by the memory limit (the slowest measured: a default `sort()` of a million numbers, about 5 s).
 * The hard bound comes from the worker thread the engine runs in: it is terminated when the run has
 * not ended shortly after its deadline (worker-pool.ts); this tuner makes that the rare case, in
 * which the run's console output is lost and a new worker must start.
 * Cost: a pure arithmetic loop runs measurably slower (more handler calls); typical reactor code is
 * dominated by start-up (docs/performance.md, "Figures behind the code's choices").
 *
 * The counter's offset inside the C `JSContext` struct is found at start-up by calibration: the one
 * field that is exactly 10,000 whenever the handler runs and below it in between, then verified by
 * setting it to 1 and counting handler calls. If calibration is ambiguous or verification fails, the
 * tuner is not used and QuickJS's own schedule applies (`stats().tunedInterrupts` is false).
 */
import type { QuickJSContext, QuickJSWASMModule } from 'quickjs-emscripten';

/** QuickJS's JS_INTERRUPT_COUNTER_INIT. */
const COUNTER_INIT = 10_000;
/** Ticks allowed between two deadline checks when ticks are fast. */
export const MAX_TICKS_BETWEEN_CHECKS = 8;
/** Ticks are "slow" when checks come further apart than this. */
const TARGET_INTERVAL_MS = 1;
/** Bytes of the JSContext struct searched for the counter. */
const SCAN_BYTES = 1024;

/** Builds deadline-checking interrupt handlers that keep checks a few ticks apart. */
export class InterruptTuner {
  readonly #memory: WebAssembly.Memory;
  readonly #offset: number;
  #view: Int32Array;

  private constructor(module: QuickJSWASMModule, offset: number) {
    this.#memory = module.getWasmMemory();
    this.#view = new Int32Array(this.#memory.buffer);
    this.#offset = offset;
  }

  /** Finds the counter in `module`'s JSContext layout; null when it cannot be found with certainty. */
  static calibrate(module: QuickJSWASMModule): InterruptTuner | null {
    try {
      const offset = findCounterOffset(module);
      if (offset === null) return null;
      const tuner = new InterruptTuner(module, offset);
      return tuner.#verify(module) ? tuner : null;
    } catch {
      return null;
    }
  }

  /**
   * An interrupt handler for `context` that stops execution after `deadline` (a performance.now()
   * time) and calls `onInterrupt` when it does.
   */
  handler(context: QuickJSContext, deadline: number, onInterrupt: () => void): () => boolean {
    const index = (contextPointer(context) + this.#offset) >> 2;
    let counter = MAX_TICKS_BETWEEN_CHECKS;
    this.#write(index, counter); // a fresh context starts at 10,000: the first check must come early too
    let last = performance.now();
    return () => {
      const now = performance.now();
      if (now > deadline) {
        onInterrupt();
        return true;
      }
      const elapsed = now - last;
      last = now;
      // Down at once when ticks are slow, up at most twofold per check and never past the cap.
      const ideal = elapsed > 0 ? Math.floor((counter * TARGET_INTERVAL_MS) / elapsed) : MAX_TICKS_BETWEEN_CHECKS;
      counter = Math.max(1, Math.min(ideal, counter * 2, MAX_TICKS_BETWEEN_CHECKS));
      this.#write(index, counter);
      return false;
    };
  }

  #write(index: number, value: number): void {
    if (this.#view.buffer !== this.#memory.buffer) this.#view = new Int32Array(this.#memory.buffer);
    this.#view[index] = value;
  }

  /** With the counter forced to 1 after each check, every tick must reach the handler. */
  #verify(module: QuickJSWASMModule): boolean {
    const runtime = module.newRuntime();
    const context = runtime.newContext();
    try {
      const index = (contextPointer(context) + this.#offset) >> 2;
      let calls = 0;
      runtime.setInterruptHandler(() => {
        calls++;
        this.#write(index, 1);
        return false;
      });
      const result = context.evalCode('for (let i = 0; i < 2000; i++) {}', 'calibration.js', { type: 'global' });
      (result.error ?? result.value).dispose();
      return result.error === undefined && calls >= 2000;
    } finally {
      context.dispose();
      runtime.dispose();
    }
  }
}

/** The JSContext* behind a QuickJSContext (a protected field of quickjs-emscripten 0.32). */
function contextPointer(context: QuickJSContext): number {
  const pointer = (context as unknown as { ctx?: { value?: unknown } }).ctx?.value;
  if (typeof pointer !== 'number' || pointer <= 0 || pointer % 4 !== 0) throw new Error('unexpected QuickJSContext layout');
  return pointer;
}

function findCounterOffset(module: QuickJSWASMModule): number | null {
  const memory = module.getWasmMemory();
  const runtime = module.newRuntime();
  const context = runtime.newContext();
  try {
    const base = contextPointer(context) >> 2;
    const words = SCAN_BYTES / 4;
    const read = (): Int32Array => new Int32Array(memory.buffer).subarray(base, base + words);
    // Words equal to COUNTER_INIT at every handler call...
    let atCheck: Set<number> | null = null;
    runtime.setInterruptHandler(() => {
      const now = read();
      const hits = new Set<number>();
      now.forEach((value, i) => value === COUNTER_INIT && hits.add(i));
      atCheck = atCheck === null ? hits : new Set([...atCheck].filter((i) => hits.has(i)));
      return false;
    });
    // ...and strictly between 0 and COUNTER_INIT while code runs between calls.
    let between: Set<number> | null = null;
    const probe = context.newFunction('probe', () => {
      const now = read();
      const hits = new Set<number>();
      now.forEach((value, i) => value > 0 && value < COUNTER_INIT && hits.add(i));
      between = between === null ? hits : new Set([...between].filter((i) => hits.has(i)));
    });
    context.setProp(context.global, 'probe', probe);
    probe.dispose();
    const result = context.evalCode('for (let i = 0; i < 60000; i++) { if (i % 997 === 500) probe(); }', 'calibration.js', {
      type: 'global',
    });
    (result.error ?? result.value).dispose();
    const checks = atCheck as Set<number> | null;
    const middles = between as Set<number> | null;
    if (result.error || checks === null || middles === null) return null;
    const candidates = [...checks].filter((i) => middles.has(i));
    return candidates.length === 1 ? (candidates[0] as number) * 4 : null;
  } finally {
    context.dispose();
    runtime.dispose();
  }
}
