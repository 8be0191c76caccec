/**
 * A QuickJS runtime + context with the prelude installed and nothing else: no reactor code has run
 * in it and it holds no run's data. Host bridge functions dispatch through a port that the run
 * claiming the context attaches, so the context can be prepared before the run exists.
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten';
import { isModuleFailure } from './module-failure.js';
import { PRELUDE_SOURCE } from './prelude.js';

/** What the sandbox's bridge functions call on the host; implemented by the run that owns the context. */
export interface HostPort {
  /** `req.bt.<path>(...args)`; returns the handle of a QuickJS promise. */
  call(path: string, argsJson: string): QuickJSHandle;
  fetch(requestJson: string): QuickJSHandle;
  /** Returns false once the log buffer is full. */
  log(level: string, text: string): boolean;
  sleep(ms: number): QuickJSHandle;
}

/** Runtimes created and disposed, per sandbox: a run that forgets to dispose shows up here. */
export interface RuntimeCounters {
  created: number;
  disposed: number;
}

export interface PrepareOptions {
  /** Limits while the prelude is installed; the run that claims the context sets its own. */
  memoryBytes: number;
  maxStackBytes: number;
  counters: RuntimeCounters;
}

export class PreparedContext {
  readonly runtime: QuickJSRuntime;
  readonly context: QuickJSContext;
  /** The prelude's `run(factory, reqJson, setupJson)`. */
  readonly run: QuickJSHandle;
  port: HostPort | null = null;
  readonly #counters: RuntimeCounters;

  private constructor(runtime: QuickJSRuntime, context: QuickJSContext, run: QuickJSHandle, counters: RuntimeCounters) {
    this.runtime = runtime;
    this.context = context;
    this.run = run;
    this.#counters = counters;
  }

  /** Creates a runtime and context and installs the prelude. */
  static create(module: QuickJSWASMModule, options: PrepareOptions): PreparedContext {
    const { memoryBytes, maxStackBytes, counters } = options;
    const runtime = module.newRuntime();
    counters.created++;
    const owned: QuickJSHandle[] = [];
    let context: QuickJSContext | undefined;
    try {
      runtime.setMemoryLimit(memoryBytes);
      runtime.setMaxStackSize(maxStackBytes);
      const ctx = (context = runtime.newContext());
      let prepared: PreparedContext | null = null;
      const port = (): HostPort | null => prepared?.port ?? null;
      const bridge = [
        ctx.newFunction('hostCall', (path, args) =>
          port()?.call(ctx.getString(path), ctx.getString(args)) ?? ctx.undefined,
        ),
        ctx.newFunction('hostFetch', (request) => port()?.fetch(ctx.getString(request)) ?? ctx.undefined),
        ctx.newFunction('hostLog', (level, text) =>
          port()?.log(ctx.getString(level), ctx.getString(text)) ? ctx.true : ctx.false,
        ),
        ctx.newFunction('hostSleep', (ms) => port()?.sleep(ctx.getNumber(ms)) ?? ctx.undefined),
      ];
      owned.push(...bridge);
      const prelude = ctx.evalCode(PRELUDE_SOURCE, 'tokenvault:prelude', { type: 'global', strict: true });
      owned.push(prelude.error ?? prelude.value);
      if (prelude.error) throw new Error('The sandbox prelude failed to compile');
      const run = ctx.callFunction(prelude.value, ctx.undefined, ...bridge);
      if (run.error) {
        owned.push(run.error);
        throw new Error('The sandbox prelude failed to install');
      }
      prepared = new PreparedContext(runtime, ctx, run.value, counters);
      return prepared;
    } catch (error) {
      if (isModuleFailure(error)) {
        owned.length = 0; // the module is retired with everything in it: free nothing
        throw error;
      }
      for (const handle of owned.splice(0)) handle.dispose();
      context?.dispose();
      runtime.dispose();
      counters.disposed++;
      throw error;
    } finally {
      // The prelude keeps its own references to the bridge functions; the host's are not needed.
      for (const handle of owned) handle.dispose();
    }
  }

  /** Frees the context and runtime; every other handle of the run must be disposed first. */
  dispose(): void {
    this.port = null;
    if (this.run.alive) this.run.dispose();
    this.context.dispose();
    this.runtime.dispose();
    this.#counters.disposed++;
  }
}
