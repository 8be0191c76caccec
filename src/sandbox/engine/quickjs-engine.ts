/**
 * The QuickJS engine: runs reactor code on the thread that calls it. Production runs go through
 * QuickJsSandbox (quickjs-sandbox.ts), which keeps one engine per worker thread (sandbox-worker.ts)
 * and uses one on the main thread for `check` only (compiling never runs code). One WebAssembly
 * module (the synchronous release build) is shared by the engine's runs; each run gets its own
 * runtime and context, created fresh and disposed after, so nothing leaks between runs or tenants.
 *
 * When an exception escapes the module itself (Node's stack exhausted inside the interpreter by some
 * deep nesting, or an abort), the module is retired: runs already in it finish or fail on their own,
 * new runs wait for a fresh module.
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten';
import { ReactorError, ValidationError } from '../../errors/errors.js';
import { ContextPool } from './context-pool.js';
import { InterruptTuner } from './interrupt-tuner.js';
import { resolveLimits } from '../limits.js';
import { isModuleFailure, SandboxCrash } from './module-failure.js';
import { wrapReactorSource } from './prelude.js';
import type { RuntimeCounters } from './prepared-context.js';
import { loadQuickJsModule } from './quickjs-module.js';
import { type EngineRunInput, runInContext } from './quickjs-run.js';
import { runtimeError, stackError } from '../reactor-outcome.js';
import { DEFAULT_SANDBOX_LIMITS, MAX_CODE_BYTES, type Sandbox, type SandboxLimits, type SandboxRunInput, type SandboxRunOutput } from '../sandbox.js';

/** Compiling never runs code, but a pathological source still gets a bound. */
const CHECK_TIMEOUT_MS = 5_000;
const DEFAULT_POOL_SIZE = 2;
const MAX_FAILURES_BEFORE_REFUSING = 4;

/** Counters for tests and monitoring. */
export interface QuickJsEngineStats {
  /** Runs started. */
  runs: number;
  /** QuickJS runtimes created (each run and each `check` uses a new one). */
  runtimesCreated: number;
  /** Runtimes disposed. `created - disposed` = runs in progress + pooled contexts + ended runs' contexts not yet freed (poolFilled()) + abandoned. */
  runtimesDisposed: number;
  /** Prepared contexts waiting in the pool. */
  pooledContexts: number;
  /** Runtimes left undisposed because their module failed under them. */
  abandonedRuntimes: number;
  /** Modules retired after a failure. */
  retiredModules: number;
  /** Size of the current module's WebAssembly memory; it grows to the peak use and never shrinks. */
  wasmMemoryBytes: number;
  /** Whether deadline checks come every few interpreter ticks instead of every 10,000 (interrupt-tuner.ts). */
  tunedInterrupts: boolean;
}

export interface QuickJsEngineOptions {
  /** Defaults for every run; a run may override them. */
  limits?: Partial<SandboxLimits>;
  /**
   * Prepared contexts kept ready (default 2; 0 disables). A pooled context has only the prelude
   * installed and is used by exactly one run, so pooling does not weaken isolation; it takes context
   * creation and the prelude compile (about 0.25 ms together) off the run's latency when the event
   * loop has idle moments.
   */
  poolSize?: number;
}

class ModuleSlot {
  retired = false;
  /** Failures seen in this module; each may have left its C stack pointer lower (quickjs-run.ts). */
  failures = 0;
  readonly pool: ContextPool;
  readonly tuner: InterruptTuner | null;
  constructor(
    readonly module: QuickJSWASMModule,
    pool: (slot: ModuleSlot) => ContextPool,
  ) {
    this.tuner = InterruptTuner.calibrate(module);
    this.pool = pool(this);
  }
}

export class QuickJsEngine implements Sandbox {
  readonly limits: SandboxLimits;
  readonly #poolSize: number;
  readonly #counters: RuntimeCounters = { created: 0, disposed: 0 };
  #slot: ModuleSlot;
  #replacement: Promise<ModuleSlot> | null = null;
  #runs = 0;
  #abandoned = 0;
  #retired = 0;

  /** Use `createQuickJsEngine`. */
  constructor(module: QuickJSWASMModule, limits: SandboxLimits, poolSize: number) {
    this.limits = limits;
    this.#poolSize = poolSize;
    this.#slot = this.#newSlot(module);
  }

  check(code: string): void {
    assertCodeSize(code, (message) => new ValidationError({ code: [message] }));
    const slot = this.#slot;
    // Until its replacement is ready, a retired module still compiles for check(), which cannot
    // wait; but only for a few failures, so leaked C stack never adds up to the 5 MiB reserved.
    if (slot.retired && slot.failures >= MAX_FAILURES_BEFORE_REFUSING) {
      throw new ReactorError('ServiceUnavailableError', 503, 'The reactor sandbox is restarting; try again');
    }
    let runtime: QuickJSRuntime | undefined;
    let context: QuickJSContext | undefined;
    let syntaxError: string | undefined;
    let crashed = false;
    try {
      runtime = slot.module.newRuntime();
      this.#counters.created++;
      runtime.setMemoryLimit(this.limits.memoryBytes);
      runtime.setMaxStackSize(this.limits.maxStackBytes);
      const deadline = performance.now() + CHECK_TIMEOUT_MS;
      runtime.setInterruptHandler(() => performance.now() > deadline);
      context = runtime.newContext();
      const compiled = context.evalCode(wrapReactorSource(code), 'reactor.js', { type: 'global', compileOnly: true });
      if (compiled.error) {
        syntaxError = syntaxMessage(context, compiled.error);
        compiled.error.dispose();
      } else {
        compiled.value.dispose();
      }
    } catch (error) {
      if (!isModuleFailure(error)) throw error;
      crashed = true;
      if (runtime !== undefined) this.#abandoned++;
      this.#retire(slot);
      // Node's stack ran out in the parser: the code nests too deeply. Anything else is the module
      // failing, not the code.
      if (error instanceof RangeError) throw new ValidationError({ code: ['is nested too deeply to compile'] });
      throw new ReactorError('ServiceUnavailableError', 503, 'The reactor sandbox is restarting; try again');
    } finally {
      // A runtime whose module failed is abandoned with it: freeing it could abort again.
      if (!crashed) {
        context?.dispose();
        if (runtime !== undefined) {
          runtime.dispose();
          this.#counters.disposed++;
        }
      }
    }
    if (syntaxError !== undefined) throw new ValidationError({ code: [syntaxError] });
  }

  /**
   * @param budgetMs Wall time the run may take, when less than `limits.timeoutMs` (the time left of
   *   a deadline set by the caller); a run past it fails with the timeout error of `limits.timeoutMs`.
   */
  run(input: SandboxRunInput, budgetMs?: number): Promise<SandboxRunOutput> {
    const { req, ...rest } = input;
    let reqJson: string;
    try {
      reqJson = JSON.stringify({ ...req, args: req.args ?? null, configuration: req.configuration ?? {} });
    } catch {
      return Promise.reject(runtimeError('Reactor arguments are not JSON'));
    }
    return this.runJson({ ...rest, reqJson }, budgetMs);
  }

  /**
   * `run` with `req` already JSON text, as the sandbox worker receives it (worker-protocol.ts): it is
   * handed to the prelude as it is, not parsed and serialized again.
   */
  async runJson(input: EngineRunInput, budgetMs?: number): Promise<SandboxRunOutput> {
    assertCodeSize(input.code, (message) => runtimeError(`Reactor code ${message}`));
    const limits = resolveLimits(this.limits, input.limits);
    // Awaiting first also means QuickJS is entered from a microtask, on a shallow host stack.
    const slot = await this.#healthySlot().catch(() => {
      throw new ReactorError('ServiceUnavailableError', 503, 'The reactor sandbox could not be restarted; try again');
    });
    this.#runs++;
    try {
      return await runInContext(
        slot.pool.take(),
        input,
        limits,
        {
          tuner: slot.tuner,
          release: (used) => slot.pool.release(used),
          onModuleFailure: () => {
            this.#abandoned++;
            this.#retire(slot);
          },
        },
        budgetMs,
      );
    } catch (error) {
      if (error instanceof SandboxCrash) {
        this.#abandoned++;
        this.#retire(slot);
        throw error.reason === 'stack' ? stackError() : runtimeError('Reactor crashed the sandbox');
      }
      if (isModuleFailure(error)) {
        // Preparing the context failed: its runtime is abandoned with the module.
        this.#abandoned++;
        this.#retire(slot);
        throw runtimeError('Reactor crashed the sandbox');
      }
      if (error instanceof ReactorError) throw error;
      throw runtimeError('Reactor failed in the sandbox');
    }
  }

  stats(): QuickJsEngineStats {
    return {
      runs: this.#runs,
      runtimesCreated: this.#counters.created,
      runtimesDisposed: this.#counters.disposed,
      pooledContexts: this.#slot.pool.idle,
      abandonedRuntimes: this.#abandoned,
      retiredModules: this.#retired,
      wasmMemoryBytes: this.#slot.module.getWasmMemory().buffer.byteLength,
      tunedInterrupts: this.#slot.tuner !== null,
    };
  }

  /** Resolves once the pool of prepared contexts is full and ended runs' contexts are freed (or the pool has stopped). */
  poolFilled(): Promise<void> {
    return this.#slot.pool.filled();
  }

  #newSlot(module: QuickJSWASMModule): ModuleSlot {
    return new ModuleSlot(
      module,
      (slot) =>
        new ContextPool(module, {
          size: this.#poolSize,
          memoryBytes: this.limits.memoryBytes,
          maxStackBytes: this.limits.maxStackBytes,
          counters: this.#counters,
          onModuleFailure: () => {
            this.#abandoned++;
            this.#retire(slot);
          },
        }),
    );
  }

  async #healthySlot(): Promise<ModuleSlot> {
    while (this.#slot.retired) await this.#replace();
    return this.#slot;
  }

  #retire(slot: ModuleSlot): void {
    slot.failures++;
    if (slot.retired) return;
    slot.retired = true;
    this.#abandoned += slot.pool.close();
    this.#retired++;
    // Start the replacement now so check(), which cannot wait, finds it ready soon.
    void this.#replace().catch(() => undefined);
  }

  #replace(): Promise<ModuleSlot> {
    this.#replacement ??= loadQuickJsModule().then(
      (module) => {
        this.#slot = this.#newSlot(module);
        this.#replacement = null;
        return this.#slot;
      },
      (error: unknown) => {
        this.#replacement = null;
        throw error;
      },
    );
    return this.#replacement;
  }
}

function assertCodeSize(code: unknown, fail: (message: string) => Error): asserts code is string {
  if (typeof code !== 'string') throw fail('must be a string');
  if (Buffer.byteLength(code) > MAX_CODE_BYTES) throw fail(`must be at most ${MAX_CODE_BYTES} bytes`);
}

/** `SyntaxError: <message> (line N)` from a compile error, without its stack. */
function syntaxMessage(context: QuickJSContext, error: QuickJSHandle): string {
  const read = (name: string): unknown => {
    const h = context.getProp(error, name);
    try {
      const type = context.typeof(h);
      return type === 'string' ? context.getString(h) : type === 'number' ? context.getNumber(h) : undefined;
    } finally {
      h.dispose();
    }
  };
  const name = read('name');
  const message = read('message');
  const line = read('lineNumber');
  if (message === 'out of memory') return 'is too large to compile within the memory limit';
  if (message === 'stack overflow') return 'is nested too deeply to compile';
  const text = `${typeof name === 'string' ? name : 'SyntaxError'}: ${typeof message === 'string' ? message : 'invalid code'}`;
  return typeof line === 'number' ? `${text} (line ${line})` : text;
}

/**
 * Creates an engine on its own QuickJS WebAssembly module, running on the calling thread.
 * @example const engine = await createQuickJsEngine({ limits: { timeoutMs: 5_000 } });
 */
export async function createQuickJsEngine(options?: QuickJsEngineOptions): Promise<QuickJsEngine> {
  const limits = resolveLimits(DEFAULT_SANDBOX_LIMITS, options?.limits);
  const poolSize = options?.poolSize ?? DEFAULT_POOL_SIZE;
  if (!Number.isInteger(poolSize) || poolSize < 0 || poolSize > 64) {
    throw new ValidationError({ poolSize: ['must be an integer from 0 to 64'] });
  }
  const module = await loadQuickJsModule();
  return new QuickJsEngine(module, limits, poolSize);
}
