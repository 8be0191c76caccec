/**
 * The JavaScript evaluated inside every fresh QuickJS context before reactor code. It defines the
 * globals reactor code sees (error classes, console, fetch, setTimeout) and returns the `run`
 * function the host calls once. It holds nothing specific to a run until `run` is called, so a
 * context can be prepared ahead of time (see context-pool.ts).
 *
 * The host bridge functions arrive as arguments, never as globals, so reactor code only reaches them
 * through the wrappers below. Everything crossing the boundary is a JSON string: the wrappers
 * serialize on the way out and parse on the way in. Built-ins are captured up front because reactor
 * code may overwrite the globals (that only harms its own run: every run gets a new context).
 *
 * `run(factory, reqJson, setupJson)` always fulfils with a string: 'R' + result JSON, or 'E' + an
 * error description `{ kind, status, message, reason?, body?, headers? }`. Only an uncatchable
 * interrupt (the deadline) or running out of memory while reporting can make it reject.
 */
export const PRELUDE_SOURCE = String.raw`(function (hostCall, hostFetch, hostLog, hostSleep) {
  'use strict';
  const G = globalThis;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const defineProperty = Object.defineProperty;
  const keys = Object.keys;
  const isArray = Array.isArray;
  const WeakMapCtor = WeakMap;
  const MapCtor = Map;
  const StringCtor = String;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const InternalErrorCtor = G.InternalError;
  // Set by run(): which host capabilities this run has.
  let fetchEnabled = false;
  let maxResultBytes = 0;

  const hidden = (target, name, value) =>
    defineProperty(target, name, { value, writable: true, configurable: true, enumerable: false });

  // Statuses of errors that came from the host (bt calls), out of reach of reactor code.
  const hostOrigin = new WeakMapCtor();

  // One class expression for all of them: QuickJS compile time grows with the prelude's size.
  const errorClasses = [
    ['AuthenticationError', 401],
    ['AuthorizationError', 403],
    ['BadRequestError', 400],
    ['InvalidPaymentMethodError', 402],
    ['RateLimitError', 429],
    ['ReactorRuntimeError', 500],
    ['ServiceUnavailableError', 503],
  ].map(([name, status]) => {
    const C = class extends ErrorCtor {};
    defineProperty(C, 'name', { value: name, configurable: true });
    hidden(C.prototype, 'name', name);
    hidden(C.prototype, 'status', status);
    hidden(G, name, C);
    return [C, name, status];
  });
  class CustomHttpResponseError extends Error {
    constructor(response) {
      const r = response !== null && typeof response === 'object' ? response : {};
      super(r.message === undefined ? 'Custom HTTP response ' + r.status : r.message);
      this.status = r.status;
      this.headers = r.headers === undefined ? {} : r.headers;
      this.body = r.body;
    }
  }
  hidden(CustomHttpResponseError.prototype, 'name', 'CustomHttpResponseError');
  hidden(G, 'CustomHttpResponseError', CustomHttpResponseError);

  const classByStatus = new MapCtor();
  for (const [C, , status] of errorClasses) classByStatus.set(status, C);

  // Turns a host error description into an error object reactor code can catch.
  function hostError(json, fallbackName) {
    let d;
    try { d = parse(json); } catch (_) { d = { name: fallbackName, message: StringCtor(json), status: 500 }; }
    const C = classByStatus.get(d.status);
    const e = C ? new C(d.message) : new ErrorCtor(d.message);
    if (!C) hidden(e, 'name', d.name);
    hidden(e, 'status', d.status);
    if (d.errors !== undefined) hidden(e, 'errors', d.errors);
    hostOrigin.set(e, { kind: C ? C.prototype.name : d.name, status: d.status });
    return e;
  }

  function describeValue(v) {
    if (typeof v === 'string') return v;
    try {
      if (v instanceof ErrorCtor) return v.name + ': ' + v.message;
      const s = stringify(v);
      return s === undefined ? StringCtor(v) : s;
    } catch (_) {
      try { return StringCtor(v); } catch (_) { return '[unprintable]'; }
    }
  }

  // console: bounded capture on the host; once the host says it is full, stop formatting.
  let logsFull = false;
  function emit(level, args) {
    if (logsFull) return;
    let line = '';
    for (let i = 0; i < args.length; i++) line += (i ? ' ' : '') + describeValue(args[i]);
    if (!hostLog(level, line)) logsFull = true;
  }
  const consoleObject = {};
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
    hidden(consoleObject, level, function () { emit(level, arguments); });
  }
  hidden(G, 'console', consoleObject);

  // setTimeout / clearTimeout on a host sleep; a run ends when its promise settles, pending timers or not.
  const timers = new MapCtor();
  let nextTimer = 0;
  hidden(G, 'setTimeout', function setTimeout(callback, ms, ...args) {
    if (typeof callback !== 'function') throw new TypeErrorCtor('setTimeout: callback must be a function');
    const id = ++nextTimer;
    timers.set(id, true);
    const delay = Number(ms);
    hostSleep(delay > 0 ? delay : 0).then(() => {
      if (!timers.delete(id)) return;
      try { callback(...args); } catch (e) { emit('error', ['Uncaught error in setTimeout callback:', e]); }
    });
    return id;
  });
  hidden(G, 'clearTimeout', function clearTimeout(id) { timers.delete(id); });

  function apiFunction(path) {
    return async function (...args) {
      while (args.length > 0 && args[args.length - 1] === undefined) args.pop();
      let json;
      try { json = stringify(args); } catch (e) {
        throw new TypeErrorCtor('bt.' + path + ': arguments must be JSON-serializable (' + describeValue(e) + ')');
      }
      let out;
      try { out = await hostCall(path, json); } catch (e) { throw hostError(e, 'Error'); }
      return out === undefined ? undefined : parse(out);
    };
  }

  function buildBt(paths) {
    const root = {};
    for (const path of paths) {
      const parts = path.split('.');
      let node = root;
      for (let i = 0; i < parts.length - 1; i++) {
        if (!Object.prototype.hasOwnProperty.call(node, parts[i])) {
          defineProperty(node, parts[i], { value: {}, writable: true, enumerable: true, configurable: true });
        }
        node = node[parts[i]];
      }
      defineProperty(node, parts[parts.length - 1], { value: apiFunction(path), writable: true, enumerable: true, configurable: true });
    }
    return root;
  }

  function normalizeHeaders(headers) {
    const out = {};
    if (headers === undefined || headers === null) return out;
    const entries = isArray(headers) ? headers : keys(headers).map((k) => [k, headers[k]]);
    for (const [k, v] of entries) out[StringCtor(k).toLowerCase()] = StringCtor(v);
    return out;
  }

  function makeResponse(r) {
    const headers = {};
    for (const k of keys(r.headers)) headers[k] = r.headers[k];
    hidden(headers, 'get', (name) => {
      const v = r.headers[StringCtor(name).toLowerCase()];
      return v === undefined ? null : v;
    });
    hidden(headers, 'has', (name) => r.headers[StringCtor(name).toLowerCase()] !== undefined);
    return {
      status: r.status,
      statusText: r.statusText,
      ok: r.status >= 200 && r.status < 300,
      url: r.url,
      headers,
      text: async () => r.body,
      json: async () => parse(r.body),
    };
  }

  hidden(G, 'fetch', async function fetch(input, init) {
    if (!fetchEnabled) throw new TypeErrorCtor('fetch is not available to this reactor');
    const options = init === undefined || init === null ? {} : init;
    const url = StringCtor(input);
    const method = options.method === undefined ? 'GET' : StringCtor(options.method).toUpperCase();
    const headers = normalizeHeaders(options.headers);
    let body = null;
    if (options.body !== undefined && options.body !== null) {
      if (typeof options.body === 'string') body = options.body;
      else {
        body = stringify(options.body);
        if (headers['content-type'] === undefined) headers['content-type'] = 'application/json';
      }
    }
    let out;
    try { out = await hostFetch(stringify({ url, method, headers, body })); } catch (e) {
      const d = (() => { try { return parse(e); } catch (_) { return { message: StringCtor(e) }; } })();
      throw new TypeErrorCtor(d.message);
    }
    const r = parse(out);
    r.url = url;
    return makeResponse(r);
  });

  function messageOf(e) {
    const m = e.message;
    if (typeof m === 'string' && m !== '') return m;
    if (m !== undefined && m !== null && m !== '') return StringCtor(m);
    return StringCtor(e);
  }

  function describeError(e) {
    try {
      if (e === null || (typeof e !== 'object' && typeof e !== 'function')) {
        return { kind: 'ReactorRuntimeError', status: 500, message: StringCtor(e) };
      }
      if (e instanceof CustomHttpResponseError) {
        return { kind: 'CustomHttpResponseError', status: e.status, message: messageOf(e), body: e.body, headers: e.headers };
      }
      const origin = hostOrigin.get(e);
      if (origin !== undefined) return { kind: origin.kind, status: origin.status, message: messageOf(e) };
      for (const [C, name, status] of errorClasses) {
        if (e instanceof C) return { kind: name, status, message: messageOf(e) };
      }
      if (InternalErrorCtor !== undefined && e instanceof InternalErrorCtor) {
        if (e.message === 'out of memory') return { kind: 'ReactorRuntimeError', status: 500, message: '', reason: 'memory' };
        if (e.message === 'stack overflow') return { kind: 'ReactorRuntimeError', status: 500, message: '', reason: 'stack' };
      }
      return { kind: 'ReactorRuntimeError', status: 500, message: messageOf(e) };
    } catch (_) {
      return { kind: 'ReactorRuntimeError', status: 500, message: 'Reactor threw a value that cannot be described' };
    }
  }

  function failure(d) {
    try { return 'E' + stringify(d); } catch (e) {
      return 'E' + stringify({ kind: 'ReactorRuntimeError', status: 500, message: d.message, reason: 'unserializable-error', detail: describeValue(e) });
    }
  }

  function rejectNonJson(key, value) {
    const t = typeof value;
    if (t === 'function' || t === 'symbol' || t === 'bigint') {
      throw new TypeErrorCtor('a ' + t + (key === '' ? '' : ' at key "' + key + '"') + ' is not a JSON value');
    }
    return value;
  }

  return async function run(factory, reqJson, setupJson) {
    let value;
    try {
      const setup = parse(setupJson);
      fetchEnabled = setup.fetch;
      maxResultBytes = setup.maxResultBytes;
      const bt = setup.btPaths === null ? null : buildBt(setup.btPaths);
      const module = { exports: {} };
      factory.call(module.exports, module, module.exports);
      const main = module.exports;
      if (typeof main !== 'function') {
        return failure({ kind: 'ReactorRuntimeError', status: 500, message: main === null ? 'null' : typeof main, reason: 'no-function' });
      }
      const input = parse(reqJson);
      value = await main({ args: input.args, configuration: input.configuration, bt });
    } catch (e) {
      return failure(describeError(e));
    }
    let json;
    try { json = stringify(value === undefined ? null : value, rejectNonJson); } catch (e) {
      return failure({ kind: 'ReactorRuntimeError', status: 500, message: messageOf(e), reason: 'unserializable' });
    }
    if (json === undefined) return 'Rnull';
    // Characters never outnumber UTF-8 bytes, so this spares copying an oversized result to the host.
    if (json.length > maxResultBytes) return failure({ kind: 'ReactorRuntimeError', status: 500, message: '', reason: 'too-large' });
    return 'R' + json;
  };
})`;

/**
 * Wraps reactor source in a CommonJS-style function on the same first line, so compile errors keep
 * the reactor's own line numbers.
 */
export function wrapReactorSource(code: string): string {
  return `(function (module, exports) {${code}\n})`;
}
