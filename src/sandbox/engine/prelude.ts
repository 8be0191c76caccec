/**
 * The JavaScript evaluated inside every fresh QuickJS context before reactor code. It returns the
 * `run` function the host calls once, and installs the globals reactor code sees (error classes,
 * console, fetch, setTimeout) as lazy accessors: the first read loads that global's part
 * (prelude-parts.ts) through the host's `load`. It holds nothing specific to a run until `run` is
 * called, so a context can be prepared ahead of time (see context-pool.ts).
 *
 * Why lazy: QuickJS in WebAssembly compiles about one statement per microsecond here, and the whole
 * prelude compiled eagerly (~300 statements) cost 0.8 ms per context, four times a raw "new context
 * + eval" (test/bench/reactors.mjs). A trivial reactor now compiles only this core; a reactor that
 * uses fetch or throws pays for those parts when it does.
 *
 * The core receives only `load`; the host bridge functions (bt calls, fetch, console, timers) are
 * passed to the parts that use them, never set as globals, so reactor code reaches them only through
 * the wrappers. Everything crossing the boundary is a JSON string. The core captures the built-ins
 * the bridge relies on (`B`) before reactor code runs and every `load` hands them on, so a reactor
 * that replaces JSON or Object.defineProperty does not break its own bt calls, fetch or console.
 *
 * `run(factory, reqJson, btPathsJson, maxResultBytes)` always fulfils with a string: 'R' + result
 * JSON, or 'E' + an error description `{ kind, status, message, reason?, body?, headers? }`. Only an
 * uncatchable interrupt (the deadline) or running out of memory while reporting can make it reject.
 */
import { PART_GLOBALS } from './prelude-parts.js';

export const PRELUDE_SOURCE = String.raw`(function (load) {
  'use strict';
  const G = globalThis;
  const define = Object.defineProperty;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const TypeErrorCtor = TypeError;
  // Built-ins as they are before reactor code runs, for the parts (prelude-parts.ts).
  const B = {
    define, stringify, parse, TypeError: TypeErrorCtor, String, Number, Error, InternalError: G.InternalError, WeakMap, Map,
    keys: Object.keys, isArray: Array.isArray, hasOwn: Object.prototype.hasOwnProperty,
  };
  for (const name of '${Object.values(PART_GLOBALS).flat().join(' ')}'.split(' ')) {
    define(G, name, {
      get() { return load(name, B); },
      set(value) { define(G, name, { value, writable: true, configurable: true }); },
      configurable: true,
    });
  }
  function rejectNonJson(key, value) {
    const t = typeof value;
    if (t === 'function' || t === 'symbol' || t === 'bigint') {
      throw new TypeErrorCtor('a ' + t + (key === '' ? '' : ' at key "' + key + '"') + ' is not a JSON value');
    }
    return value;
  }
  return async function run(factory, reqJson, btPathsJson, maxResultBytes) {
    let value;
    try {
      const module = { exports: {} };
      factory.call(module.exports, module, module.exports);
      const main = module.exports;
      if (typeof main !== 'function') return load('errors', B).noFunction(main);
      const input = parse(reqJson);
      const bt = btPathsJson === null ? null : load('bt', B).build(parse(btPathsJson));
      // A proxy transform's req also has method, headers, path, query (sandbox.ts SandboxRunInput.req).
      input.bt = bt;
      value = await main(input);
    } catch (e) {
      return load('errors', B).fail(e);
    }
    let json;
    try { json = stringify(value === undefined ? null : value, rejectNonJson); } catch (e) {
      return load('errors', B).unserializable(e);
    }
    if (json === undefined) return 'Rnull';
    // Characters never outnumber UTF-8 bytes, so this spares copying an oversized result to the host.
    if (json.length > maxResultBytes) return load('errors', B).tooLarge();
    return 'R' + json;
  };
})`;

/** Wraps reactor source in a CommonJS-style function on the same first line, so compile errors keep the reactor's own line numbers. */
export function wrapReactorSource(code: string): string {
  return `(function (module, exports) {${code}\n})`;
}
