/**
 * A QuickJS runtime + context with the prelude installed and nothing else: no reactor code has run
 * in it and it holds no run's data. Host bridge functions dispatch through a port that the run
 * claiming the context attaches, so the context can be prepared before the run exists.
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten';
import { isModuleFailure } from './module-failure.js';
import type { HostPort } from './host-port.js';
import { PartLoader } from './part-loader.js';
import { PRELUDE_SOURCE } from './prelude.js';

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
  /** The prelude's `run(factory, reqJson, btPathsJson, maxResultBytes)`. */
  readonly run: QuickJSHandle;
  port: HostPort | null = null;
  readonly #parts: PartLoader;
  readonly #counters: RuntimeCounters;

  private constructor(runtime: QuickJSRuntime, context: QuickJSContext, run: QuickJSHandle, parts: PartLoader, counters: RuntimeCounters) {
    this.runtime = runtime;
    this.context = context;
    this.run = run;
    this.#parts = parts;
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
      const parts = new PartLoader(ctx, () => prepared?.port ?? null);
      owned.push(parts.load);
      const prelude = ctx.evalCode(PRELUDE_SOURCE, 'tokenvault:prelude', { type: 'global', strict: true });
      if (prelude.error) {
        owned.push(prelude.error);
        throw new Error('The sandbox prelude failed to compile');
      }
      const run = ctx.callFunction(prelude.value, ctx.undefined, parts.load);
      prelude.value.dispose();
      if (run.error) {
        owned.push(run.error);
        throw new Error('The sandbox prelude failed to install');
      }
      owned.length = 0;
      prepared = new PreparedContext(runtime, ctx, run.value, parts, counters);
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
    }
  }

  /** Frees the context and runtime; every other handle of the run must be disposed first. */
  dispose(): void {
    this.port = null;
    if (this.run.alive) this.run.dispose();
    this.#parts.dispose();
    this.context.dispose();
    this.runtime.dispose();
    this.#counters.disposed++;
  }
}
