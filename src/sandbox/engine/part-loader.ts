/**
 * Host side of the prelude's `load(key, builtins)` (prelude.ts): evaluates a part of
 * prelude-parts.ts in one context the first time it is needed, keeps its exports for the context's
 * life, and answers a global's name with that global's value. The bridge functions the parts call (bt calls, fetch,
 * console, timers) are created with the first part, so a run that needs none never makes them.
 */
import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten';
import { PART_GLOBALS, PRELUDE_PARTS } from './prelude-parts.js';
import type { HostPort } from './host-port.js';

const PART_OF_GLOBAL = new Map(Object.entries(PART_GLOBALS).flatMap(([part, names]) => names.map((name) => [name, part] as const)));

type LoadResult = QuickJSHandle | { error: QuickJSHandle };

export class PartLoader {
  /** The `load` function handed to the prelude core and to every part. */
  readonly load: QuickJSHandle;
  readonly #ctx: QuickJSContext;
  readonly #port: () => HostPort | null;
  readonly #exports = new Map<string, QuickJSHandle>();
  #bridge: QuickJSHandle[] | null = null;

  constructor(ctx: QuickJSContext, port: () => HostPort | null) {
    this.#ctx = ctx;
    this.#port = port;
    this.load = ctx.newFunction('load', (key, builtins) => this.#load(ctx.getString(key), builtins));
  }

  /** Frees the parts' exports and the bridge functions; the context is disposed next. */
  dispose(): void {
    for (const handle of this.#exports.values()) handle.dispose();
    this.#exports.clear();
    for (const handle of this.#bridge ?? []) handle.dispose();
    this.load.dispose();
  }

  // Returned handles are freed by quickjs-emscripten after it copies them into QuickJS.
  #load(key: string, builtins: QuickJSHandle): LoadResult {
    const ctx = this.#ctx;
    const global = PART_OF_GLOBAL.get(key);
    const loaded = this.#part(global ?? key, builtins);
    if ('error' in loaded) return loaded;
    if (global === undefined) return loaded.dup();
    const globals = ctx.getProp(loaded, 'globals');
    try {
      return ctx.getProp(globals, key);
    } finally {
      globals.dispose();
    }
  }

  #part(name: string, builtins: QuickJSHandle): LoadResult {
    const cached = this.#exports.get(name);
    if (cached !== undefined) return cached;
    const ctx = this.#ctx;
    const source = PRELUDE_PARTS[name];
    if (source === undefined) return { error: ctx.newError(`no prelude part ${name}`) };
    const factory = ctx.evalCode(source, `tokenvault:${name}`, { type: 'global', strict: true });
    if (factory.error) return { error: factory.error };
    const exports = ctx.callFunction(factory.value, ctx.undefined, this.load, builtins, ...this.#bridgeFunctions());
    factory.value.dispose();
    if (exports.error) return { error: exports.error };
    this.#exports.set(name, exports.value);
    return exports.value;
  }

  #bridgeFunctions(): QuickJSHandle[] {
    if (this.#bridge !== null) return this.#bridge;
    const ctx = this.#ctx;
    const port = this.#port;
    this.#bridge = [
      ctx.newFunction('hostCall', (path, args) => port()?.call(ctx.getString(path), ctx.getString(args)) ?? ctx.undefined),
      ctx.newFunction('hostFetch', (request) => port()?.fetch(ctx.getString(request)) ?? ctx.undefined),
      ctx.newFunction('hostLog', (level, text) => (port()?.log(ctx.getString(level), ctx.getString(text)) ? ctx.true : ctx.false)),
      ctx.newFunction('hostSleep', (ms) => port()?.sleep(ctx.getNumber(ms)) ?? ctx.undefined),
    ];
    return this.#bridge;
  }
}
