/**
 * The prelude's lazily loaded parts (see prelude.ts). Each source evaluates to a factory
 * `(load, B, hostCall, hostFetch, hostLog, hostSleep) => exports` (B: the core's captured built-ins); `exports.globals` replace the core's
 * lazy accessors on the global object. The host loads a part at most once per context
 * (part-loader.ts): when reactor code first reads one of its globals, or when the core or another
 * part needs it (errors when a run fails, bt when the reactor has an application).
 */

/** The globals each part defines; every other part is loaded only by the core or by other parts. */
export const PART_GLOBALS: Readonly<Record<string, readonly string[]>> = {
  errors: [
    'AuthenticationError',
    'AuthorizationError',
    'BadRequestError',
    'InvalidPaymentMethodError',
    'RateLimitError',
    'ReactorRuntimeError',
    'ServiceUnavailableError',
    'CustomHttpResponseError',
  ],
  console: ['console'],
  timers: ['setTimeout', 'clearTimeout'],
  fetch: ['fetch'],
};

const HEADER = `(function (load, B, hostCall, hostFetch, hostLog, hostSleep) {
  'use strict';
  const G = globalThis;
  const { define, stringify, parse, String: S, Number, Error, TypeError: TypeErrorCtor, InternalError, WeakMap, Map, keys, isArray, hasOwn } = B;
  // Replaces the core's accessors; a global reactor code froze keeps its accessor, which still answers.
  const install = (globals) => {
    for (const k in globals) try { define(G, k, { value: globals[k], writable: true, configurable: true }); } catch (_) {}
    return globals;
  };`;

const hidden = `const hidden = (target, name, value) =>
    define(target, name, { value, writable: true, configurable: true, enumerable: false });`;

const describeValue = `function describeValue(v) {
    if (typeof v === 'string') return v;
    try {
      if (v instanceof Error) return v.name + ': ' + v.message;
      const s = stringify(v);
      return s === undefined ? S(v) : s;
    } catch (_) {
      try { return S(v); } catch (_) { return '[unprintable]'; }
    }
  }`;

/** Error classes (ARCHITECTURE.md, Reference facts), host error objects for bt calls, and the description of a failure. */
const ERRORS = String.raw`${HEADER}
  ${hidden}
  ${describeValue}
  // Statuses of errors that came from the host (bt calls), out of reach of reactor code.
  const hostOrigin = new WeakMap();
  const globals = {};
  const errorClasses = [
    ['AuthenticationError', 401],
    ['AuthorizationError', 403],
    ['BadRequestError', 400],
    ['InvalidPaymentMethodError', 402],
    ['RateLimitError', 429],
    ['ReactorRuntimeError', 500],
    ['ServiceUnavailableError', 503],
  ].map(([name, status]) => {
    const C = class extends Error {};
    define(C, 'name', { value: name, configurable: true });
    hidden(C.prototype, 'name', name);
    hidden(C.prototype, 'status', status);
    globals[name] = C;
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
  globals.CustomHttpResponseError = CustomHttpResponseError;
  const classByStatus = new Map();
  for (const [C, , status] of errorClasses) classByStatus.set(status, C);

  // Turns a host error description into an error object reactor code can catch.
  function hostError(json, fallbackName) {
    let d;
    try { d = parse(json); } catch (_) { d = { name: fallbackName, message: S(json), status: 500 }; }
    const C = classByStatus.get(d.status);
    const e = C ? new C(d.message) : new Error(d.message);
    if (!C) hidden(e, 'name', d.name);
    hidden(e, 'status', d.status);
    if (d.errors !== undefined) hidden(e, 'errors', d.errors);
    hostOrigin.set(e, { kind: C ? C.prototype.name : d.name, status: d.status });
    return e;
  }

  function messageOf(e) {
    const m = e.message;
    if (typeof m === 'string' && m !== '') return m;
    if (m !== undefined && m !== null && m !== '') return S(m);
    return S(e);
  }

  // The line of reactor code (evaluated as reactor.js, wrapper on its first line: prelude.ts) where an
  // unexpected error was thrown: the innermost reactor.js frame of the QuickJS stack ("(reactor.js:3:9)").
  // Scanned by hand, so built-ins reactor code replaced play no part; a stack it forged only misleads itself.
  function lineOf(e) {
    try {
      const s = e.stack;
      if (typeof s !== 'string') return undefined;
      const mark = '(reactor.js:';
      const end = s.length < 4096 ? s.length : 4096;
      for (let i = 0; i + mark.length < end; i++) {
        let j = 0;
        while (j < mark.length && s[i + j] === mark[j]) j++;
        if (j < mark.length) continue;
        let line = 0;
        let k = i + j;
        while (k < end && k < i + j + 7 && s[k] >= '0' && s[k] <= '9') line = line * 10 + (s.charCodeAt(k++) - 48);
        return k > i + j && line > 0 && (s[k] === ':' || s[k] === ')') ? line : undefined;
      }
    } catch (_) {}
    return undefined;
  }

  function describe(e) {
    try {
      if (e === null || (typeof e !== 'object' && typeof e !== 'function')) {
        return { kind: 'ReactorRuntimeError', status: 500, message: S(e) };
      }
      if (e instanceof CustomHttpResponseError) {
        return { kind: 'CustomHttpResponseError', status: e.status, message: messageOf(e), body: e.body, headers: e.headers };
      }
      const origin = hostOrigin.get(e);
      if (origin !== undefined) return { kind: origin.kind, status: origin.status, message: messageOf(e) };
      for (const [C, name, status] of errorClasses) {
        if (e instanceof C) return { kind: name, status, message: messageOf(e), line: status === 500 ? lineOf(e) : undefined };
      }
      if (InternalError !== undefined && e instanceof InternalError) {
        if (e.message === 'out of memory') return { kind: 'ReactorRuntimeError', status: 500, message: '', reason: 'memory' };
        if (e.message === 'stack overflow') return { kind: 'ReactorRuntimeError', status: 500, message: '', reason: 'stack' };
      }
      // The parser's own stack check (eval of deeply nested code) throws a SyntaxError.
      if (e instanceof SyntaxError && e.message === 'stack overflow') return { kind: 'ReactorRuntimeError', status: 500, message: '', reason: 'stack' };
      return { kind: 'ReactorRuntimeError', status: 500, message: messageOf(e), line: lineOf(e) };
    } catch (_) {
      return { kind: 'ReactorRuntimeError', status: 500, message: 'Reactor threw a value that cannot be described' };
    }
  }

  function failure(d) {
    try { return 'E' + stringify(d); } catch (e) {
      return 'E' + stringify({ kind: 'ReactorRuntimeError', status: 500, message: d.message, reason: 'unserializable-error', detail: describeValue(e) });
    }
  }
  const runtimeError = (message, reason) => failure({ kind: 'ReactorRuntimeError', status: 500, message, reason });

  return {
    globals: install(globals),
    hostError,
    describeValue,
    // The run's outcome envelopes (prelude.ts).
    fail: (e) => failure(describe(e)),
    noFunction: (main) => runtimeError(main === null ? 'null' : typeof main, 'no-function'),
    unserializable: (e) => runtimeError(messageOf(e), 'unserializable'),
    tooLarge: () => runtimeError('', 'too-large'),
  };
})`;

/** console: bounded capture on the host; once the host says it is full, stop formatting. */
const CONSOLE = String.raw`${HEADER}
  ${hidden}
  ${describeValue}
  let full = false;
  function emit(level, args) {
    if (full) return;
    let line = '';
    for (let i = 0; i < args.length; i++) line += (i ? ' ' : '') + describeValue(args[i]);
    if (!hostLog(level, line)) full = true;
  }
  const consoleObject = {};
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
    hidden(consoleObject, level, function () { emit(level, arguments); });
  }
  return { globals: install({ console: consoleObject }), emit };
})`;

/** setTimeout / clearTimeout on a host sleep; a run ends when its promise settles, pending timers or not. */
const TIMERS = String.raw`${HEADER}
  const timers = new Map();
  let nextTimer = 0;
  function setTimeout(callback, ms, ...args) {
    if (typeof callback !== 'function') throw new TypeErrorCtor('setTimeout: callback must be a function');
    const id = ++nextTimer;
    timers.set(id, true);
    const delay = Number(ms);
    hostSleep(delay > 0 ? delay : 0).then(() => {
      if (!timers.delete(id)) return;
      try { callback(...args); } catch (e) { load('console', B).emit('error', ['Uncaught error in setTimeout callback:', e]); }
    });
    return id;
  }
  function clearTimeout(id) { timers.delete(id); }
  return { globals: install({ setTimeout, clearTimeout }) };
})`;

/** A promise-bridged subset of the web fetch API; the host enforces egress rules. */
const FETCH = String.raw`${HEADER}
  ${hidden}
  function normalizeHeaders(headers) {
    const out = {};
    if (headers === undefined || headers === null) return out;
    const entries = isArray(headers) ? headers : keys(headers).map((k) => [k, headers[k]]);
    for (const [k, v] of entries) out[S(k).toLowerCase()] = S(v);
    return out;
  }
  function makeResponse(r) {
    const headers = {};
    for (const k of keys(r.headers)) headers[k] = r.headers[k];
    hidden(headers, 'get', (name) => {
      const v = r.headers[S(name).toLowerCase()];
      return v === undefined ? null : v;
    });
    hidden(headers, 'has', (name) => r.headers[S(name).toLowerCase()] !== undefined);
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
  async function fetch(input, init) {
    const options = init === undefined || init === null ? {} : init;
    const url = S(input);
    const method = options.method === undefined ? 'GET' : S(options.method).toUpperCase();
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
      let message;
      try { message = parse(e).message; } catch (_) { message = S(e); }
      throw new TypeErrorCtor(message);
    }
    const r = parse(out);
    r.url = url;
    return makeResponse(r);
  }
  return { globals: install({ fetch }) };
})`;

/** Builds the req.bt object: one promise-returning wrapper per host API path. */
const BT = String.raw`${HEADER}
  function apiFunction(path) {
    return async function (...args) {
      while (args.length > 0 && args[args.length - 1] === undefined) args.pop();
      let json;
      try { json = stringify(args); } catch (e) {
        throw new TypeErrorCtor('bt.' + path + ': arguments must be JSON-serializable (' + load('errors', B).describeValue(e) + ')');
      }
      let out;
      try { out = await hostCall(path, json); } catch (e) { throw load('errors', B).hostError(e, 'Error'); }
      return out === undefined ? undefined : parse(out);
    };
  }
  return { build(paths) {
    const root = {};
    for (const path of paths) {
      const parts = path.split('.');
      let node = root;
      for (let i = 0; i < parts.length - 1; i++) {
        if (!hasOwn.call(node, parts[i])) {
          define(node, parts[i], { value: {}, writable: true, enumerable: true, configurable: true });
        }
        node = node[parts[i]];
      }
      define(node, parts[parts.length - 1], { value: apiFunction(path), writable: true, enumerable: true, configurable: true });
    }
    return root;
  } };
})`;

/** Part sources by name, as the host's `load` evaluates them. */
export const PRELUDE_PARTS: Readonly<Record<string, string>> = { errors: ERRORS, console: CONSOLE, timers: TIMERS, fetch: FETCH, bt: BT };
