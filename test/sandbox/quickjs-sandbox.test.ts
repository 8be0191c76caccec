import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthorizationError, ConflictError, NotFoundError, ReactorError, ValidationError } from '../../src/errors/errors.js';
import { createQuickJsSandbox, type QuickJsSandbox } from '../../src/sandbox/quickjs-sandbox.js';
import { DEFAULT_SANDBOX_LIMITS, MAX_CODE_BYTES, type HostFetchRequest, type HostFetchResponse, type SandboxHost, type SandboxRunInput } from '../../src/sandbox/sandbox.js';
import { reactorFailure } from './helpers.js';

const NO_HOST: SandboxHost = { bt: null, fetch: null };

let sandbox: QuickJsSandbox;
beforeAll(async () => {
  sandbox = await createQuickJsSandbox({ limits: { timeoutMs: 30_000 } });
});
afterAll(async () => {
  await sandbox.close();
});

function run(code: string, extra: Partial<SandboxRunInput> = {}) {
  return sandbox.run({ code, req: { args: null, configuration: {} }, host: NO_HOST, ...extra });
}

describe('QuickJsSandbox.run: results', () => {
  it('passes args and configuration and returns the JSON result', async () => {
    const out = await sandbox.run({
      code: 'module.exports = async function (req) { return { raw: { args: req.args, conf: req.configuration, bt: req.bt } } }',
      req: { args: { card: { number: '4242' }, n: [1, 2] }, configuration: { key: 'v' } },
      host: NO_HOST,
    });
    expect(out).toEqual({ result: { raw: { args: { card: { number: '4242' }, n: [1, 2] }, conf: { key: 'v' }, bt: null } }, logs: [], logsTruncated: false });
  });

  it('accepts a synchronous function and exports.x style modules that replace module.exports', async () => {
    expect((await run('module.exports = (req) => ({ raw: 1 })')).result).toEqual({ raw: 1 });
    expect((await run('function main() { return 2 }\nmodule.exports = main')).result).toBe(2);
  });

  it('turns undefined into null and keeps JSON semantics for nested undefined', async () => {
    expect((await run('module.exports = () => undefined')).result).toBeNull();
    expect((await run('module.exports = () => ({ a: undefined, b: [undefined], d: new Date(0) })')).result).toEqual({
      b: [null],
      d: '1970-01-01T00:00:00.000Z',
    });
  });

  it('fails with 500 when module.exports is not a function', async () => {
    for (const code of ['module.exports = 5', '// nothing', 'exports = () => 1', 'module.exports = null']) {
      const error = await reactorFailure(run(code));
      expect(error.status).toBe(500);
      expect(error.kind).toBe('ReactorRuntimeError');
      expect(error.message).toMatch(/module\.exports to a function/);
    }
  });

  it('reports a syntax error at run time with its line', async () => {
    const error = await reactorFailure(run('module.exports = () => 1;\nlet x = ;'));
    expect(error.status).toBe(500);
    expect(error.message).toMatch(/^SyntaxError: .* \(line 2\)$/);
  });

  it('rejects results larger than maxResultBytes', async () => {
    const code = 'module.exports = () => "x".repeat(2000)';
    expect((await run(code, { limits: { maxResultBytes: 3000 } })).result).toHaveLength(2000);
    const error = await reactorFailure(run(code, { limits: { maxResultBytes: 1000 } }));
    expect(error.status).toBe(500);
    expect(error.message).toBe('Reactor result exceeds the limit of 1000 bytes');
  });

  it('counts result bytes as UTF-8, not characters', async () => {
    // 400 three-byte characters: 402 characters of JSON but 1202 bytes.
    const error = await reactorFailure(run('module.exports = () => "€".repeat(400)', { limits: { maxResultBytes: 1000 } }));
    expect(error.message).toBe('Reactor result exceeds the limit of 1000 bytes');
  });

  it('validates per-run limits', async () => {
    await expect(run('module.exports = () => 1', { limits: { timeoutMs: -5 } })).rejects.toBeInstanceOf(ValidationError);
    await expect(run('module.exports = () => 1', { limits: { maxStackBytes: 64 * 1024 * 1024 } })).rejects.toThrow(/limits\.maxStackBytes/);
  });

  it('rejects code over 256 KiB', async () => {
    const error = await reactorFailure(run(`module.exports = () => 1; // ${'x'.repeat(MAX_CODE_BYTES)}`));
    expect(error.status).toBe(500);
    expect(error.message).toMatch(/at most 262144 bytes/);
  });
});

describe('QuickJsSandbox.run: reactor errors', () => {
  const classes: [string, number][] = [
    ['AuthenticationError', 401],
    ['AuthorizationError', 403],
    ['BadRequestError', 400],
    ['InvalidPaymentMethodError', 402],
    ['RateLimitError', 429],
    ['ReactorRuntimeError', 500],
    ['ServiceUnavailableError', 503],
  ];
  it.each(classes)('%s thrown becomes a ReactorError with status %i', async (name, status) => {
    const error = await reactorFailure(run(`module.exports = async () => { throw new ${name}('it went wrong') }`));
    // A 500 is unexpected for the caller: it names the line of the reactor's code it came from.
    expect(error).toMatchObject({ kind: name, status, message: status === 500 ? 'it went wrong (line 1)' : 'it went wrong' });
  });

  it('gives the classes their names, instanceof Error, and a status the code cannot forge', async () => {
    const out = await run(`module.exports = () => {
      const e = new RateLimitError('slow down');
      return [e instanceof Error, e.name, e.status, String(e), RateLimitError.name];
    }`);
    expect(out.result).toEqual([true, 'RateLimitError', 429, 'RateLimitError: slow down', 'RateLimitError']);
    const forged = await reactorFailure(run("module.exports = () => { const e = new BadRequestError('x'); e.status = 200; throw e }"));
    expect(forged.status).toBe(400);
  });

  it('keeps a subclass of a reactor error class on its status', async () => {
    const error = await reactorFailure(run('class Mine extends AuthorizationError {}\nmodule.exports = () => { throw new Mine("no") }'));
    expect(error).toMatchObject({ kind: 'AuthorizationError', status: 403, message: 'no' });
  });

  it('CustomHttpResponseError carries status, headers and body', async () => {
    const error = await reactorFailure(
      run(`module.exports = () => { throw new CustomHttpResponseError({ status: 418, headers: { 'X-Teapot': 'yes', 'Bad Name': 'x', n: 1 }, body: { brew: false } }) }`),
    );
    expect(error).toMatchObject({ kind: 'CustomHttpResponseError', status: 418, body: { brew: false } });
    expect(error.headers).toEqual({ 'x-teapot': 'yes', n: '1' });
    expect(error.message).toBe('Custom HTTP response 418');
  });

  it('refuses a CustomHttpResponseError with an impossible status', async () => {
    for (const status of ['"abc"', '99', '600', '404.5', 'undefined']) {
      const error = await reactorFailure(run(`module.exports = () => { throw new CustomHttpResponseError({ status: ${status} }) }`));
      expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500 });
      expect(error.message).toMatch(/status must be an integer/);
    }
  });

  it('turns any other thrown value into a 500 ReactorRuntimeError with its message', async () => {
    const cases: [string, string][] = [
      ['throw new TypeError("bad type")', 'bad type (line 1)'],
      ['throw new Error("plain")', 'plain (line 1)'],
      ['throw "a string"', 'a string'],
      ['throw 42', '42'],
      ['throw null', 'null'],
      ['throw undefined', 'undefined'],
      ['throw {}', '[object Object]'],
      ['throw { message: "shaped" }', 'shaped'],
      ['null.x', "cannot read property 'x' of null (line 1)"],
    ];
    // Values without a stack have no line to give.
    for (const [statement, message] of cases) {
      const error = await reactorFailure(run(`module.exports = async () => { ${statement} }`));
      expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500, message });
    }
  });

  it('names the line of the reactor code an error came from, never its stack trace', async () => {
    const error = await reactorFailure(run('function deep() {\n  const x = 1;\n  throw new Error("boom")\n}\nmodule.exports = () => deep()'));
    expect(error.message).toBe('boom (line 3)');
    expect(error.message).not.toMatch(/\bat\b|reactor\.js/);
  });

  it('names the line of an error the engine raises, while loading or in a callback', async () => {
    const loading = await reactorFailure(run('\n\nnull.x;\nmodule.exports = () => 1'));
    expect(loading.message).toBe("cannot read property 'x' of null (line 3)");
    const callback = await reactorFailure(run('module.exports = async (req) => {\n  return [1, 2].map((n) =>\n    n.y.z);\n}'));
    expect(callback.message).toBe("cannot read property 'z' of undefined (line 3)");
    // A stack the reactor forged misleads nobody but itself, and cannot break the description.
    const forged = await reactorFailure(run('module.exports = () => { const e = new Error("f"); e.stack = "(reactor.js:99999999999"; throw e }'));
    expect(forged.message).toBe('f');
    const getter = await reactorFailure(run('module.exports = () => { const e = new Error("g"); Object.defineProperty(e, "stack", { get() { throw 1 } }); throw e }'));
    expect(getter.message).toBe('g');
  });

  it('treats an error thrown while the module loads like any other', async () => {
    const error = await reactorFailure(run('throw new BadRequestError("at load")'));
    expect(error).toMatchObject({ kind: 'BadRequestError', status: 400, message: 'at load' });
  });
});

describe('QuickJsSandbox.run: console', () => {
  it('captures console output in order, never on stdout', async () => {
    const out = await run(`module.exports = () => {
      console.log('plain', 1, { a: [1] }, null, undefined);
      console.info('info');
      console.warn('careful');
      console.error(new TypeError('bad'));
      console.debug('dbg');
      return 1;
    }`);
    expect(out.logs).toEqual(['plain 1 {"a":[1]} null undefined', 'info', '[warn] careful', '[error] TypeError: bad', 'dbg']);
    expect(out.logsTruncated).toBe(false);
  });

  it('truncates output beyond maxLogBytes and marks it', async () => {
    const out = await run('module.exports = () => { for (let i = 0; i < 100; i++) console.log("line " + i + " " + "y".repeat(20)); return "done" }', {
      limits: { maxLogBytes: 100 },
    });
    expect(out.result).toBe('done');
    expect(out.logsTruncated).toBe(true);
    expect(Buffer.byteLength(out.logs.join(''))).toBe(100);
    expect(out.logs[0]).toBe(`line 0 ${'y'.repeat(20)}`);
  });

  it('formats values that JSON cannot print', async () => {
    const out = await run('module.exports = () => { const c = {}; c.c = c; console.log(c, 10n, Symbol("s"), () => 1); return 1 }');
    expect(out.logs).toEqual(['[object Object] 10 Symbol(s) () => 1']);
  });
});

describe('QuickJsSandbox.run: req.bt', () => {
  it('calls host functions with JSON args and returns their JSON results', async () => {
    const calls: unknown[] = [];
    const host: SandboxHost = {
      fetch: null,
      bt: {
        tokens: {
          retrieve: async (...args: unknown[]) => {
            calls.push(['retrieve', ...args]);
            return { id: args[0], data: { number: '4242' }, created_at: new Date(Date.UTC(2030, 0, 1)) };
          },
          list: async (...args: unknown[]) => {
            calls.push(['list', ...args]);
            return { data: [], pagination: {} };
          },
          delete: async () => undefined,
        },
        tokenize: async (body: unknown) => ({ tokenized: body }),
      },
    };
    const out = await sandbox.run({
      code: `module.exports = async (req) => {
        const t = await req.bt.tokens.retrieve('tok_1', { expand: [1] });
        const l = await req.bt.tokens.list();
        const d = await req.bt.tokens.delete('x');
        const z = await req.bt.tokenize({ a: undefined, b: 2 });
        return { t, l, d: d === undefined, z, keys: Object.keys(req.bt).sort() };
      }`,
      req: { args: null, configuration: {} },
      host,
    });
    expect(out.result).toEqual({
      t: { id: 'tok_1', data: { number: '4242' }, created_at: '2030-01-01T00:00:00.000Z' },
      l: { data: [], pagination: {} },
      d: true,
      z: { tokenized: { b: 2 } },
      keys: ['tokenize', 'tokens'],
    });
    expect(calls).toEqual([['retrieve', 'tok_1', { expand: [1] }], ['list']]);
  });

  it('calls host functions with their parent object as this', async () => {
    class Tokens {
      #prefix = 'tok_';
      async create(body: unknown) {
        return `${this.#prefix}${JSON.stringify(body)}`;
      }
    }
    const tokens = new Tokens();
    const out = await sandbox.run({
      code: 'module.exports = async (req) => req.bt.tokens.create(1)',
      req: { args: null, configuration: {} },
      host: { fetch: null, bt: { tokens: { create: (...a: unknown[]) => tokens.create(a[0]) } } },
    });
    expect(out.result).toBe('tok_1');
  });

  it('rejects arguments that are not JSON in the sandbox, before the host sees them', async () => {
    let called = false;
    const out = await sandbox.run({
      code: 'module.exports = async (req) => { const a = {}; a.a = a; try { await req.bt.f(a) } catch (e) { return e instanceof TypeError && /JSON/.test(e.message) } }',
      req: { args: null, configuration: {} },
      host: { fetch: null, bt: { f: async () => (called = true) } },
    });
    expect(out.result).toBe(true);
    expect(called).toBe(false);
  });

  it('lets the reactor catch host errors, with message and status', async () => {
    const host: SandboxHost = {
      fetch: null,
      bt: {
        missing: async () => {
          throw new NotFoundError('Token', 'tok_9');
        },
        denied: async () => {
          throw new AuthorizationError();
        },
        invalid: async () => {
          throw new ValidationError({ 'data.number': ['is not a valid card number'] });
        },
        internal: async () => {
          throw new Error('connection string postgres://user:secret@db');
        },
      },
    };
    const out = await sandbox.run({
      code: `module.exports = async (req) => {
        const seen = [];
        for (const name of ['missing', 'denied', 'invalid', 'internal']) {
          try { await req.bt[name]() } catch (e) {
            seen.push({ name: e.name, status: e.status, message: e.message, errors: e.errors, isError: e instanceof Error,
              cls: e instanceof AuthorizationError ? 'AuthorizationError' : e instanceof BadRequestError ? 'BadRequestError' : null });
          }
        }
        return seen;
      }`,
      req: { args: null, configuration: {} },
      host,
    });
    expect(out.result).toEqual([
      { name: 'NotFoundError', status: 404, message: "Token 'tok_9' not found", isError: true, cls: null },
      { name: 'AuthorizationError', status: 403, message: 'The application lacks the permission for this operation', isError: true, cls: 'AuthorizationError' },
      {
        name: 'BadRequestError',
        status: 400,
        message: 'data.number: is not a valid card number'.replace(/^/, 'Validation failed: '),
        errors: { 'data.number': ['is not a valid card number'] },
        isError: true,
        cls: 'BadRequestError',
      },
      { name: 'ReactorRuntimeError', status: 500, message: 'Internal error in bt.internal', isError: true, cls: null },
    ]);
  });

  it('maps uncaught host errors to the matching reactor error', async () => {
    const cases: [Error, string, number][] = [
      [new AuthorizationError('no access'), 'AuthorizationError', 403],
      [new NotFoundError('Token'), 'NotFoundError', 404],
      [new ValidationError('id', 'bad'), 'BadRequestError', 400],
      [new ConflictError('exists'), 'ConflictError', 409],
      [new ReactorError('RateLimitError', 429, 'nested reactor limited'), 'RateLimitError', 429],
      [new Error('secret detail'), 'ReactorRuntimeError', 500],
    ];
    for (const [thrown, kind, status] of cases) {
      const error = await reactorFailure(
        sandbox.run({
          code: 'module.exports = async (req) => { await req.bt.call() }',
          req: { args: null, configuration: {} },
          host: { fetch: null, bt: { call: async () => Promise.reject(thrown) } },
        }),
      );
      expect(error).toMatchObject({ kind, status });
      expect(error.message).not.toMatch(/secret/);
    }
  });

  it('reports a call to a path the host does not have as a catchable error', async () => {
    const out = await sandbox.run({
      code: `module.exports = async (req) => {
        req.bt.tokens.nope = req.bt.tokens.retrieve.bind(null);
        return typeof req.bt.tokens.missing;
      }`,
      req: { args: null, configuration: {} },
      host: { fetch: null, bt: { tokens: { retrieve: async () => 1 } } },
    });
    expect(out.result).toBe('undefined');
  });

  it('runs host calls concurrently', async () => {
    let inFlight = 0;
    let peak = 0;
    // Every call waits until all four are in flight: run one at a time, they would never finish.
    let allIn!: () => void;
    const allStarted = new Promise<void>((resolve) => (allIn = resolve));
    const out = await sandbox.run({
      code: 'module.exports = async (req) => Promise.all([1, 2, 3, 4].map((n) => req.bt.slow(n)))',
      req: { args: null, configuration: {} },
      host: {
        fetch: null,
        bt: {
          slow: async (n: unknown) => {
            inFlight++;
            peak = Math.max(peak, inFlight);
            if (inFlight === 4) allIn();
            await allStarted;
            inFlight--;
            return (n as number) * 2;
          },
        },
      },
    });
    expect(out.result).toEqual([2, 4, 6, 8]);
    expect(peak).toBe(4);
  });
});

describe('QuickJsSandbox.run: fetch', () => {
  it('rejects when the host gives no fetch', async () => {
    const out = await run('module.exports = async () => { try { await fetch("https://example.com") } catch (e) { return e.message } }');
    expect(out.result).toBe('fetch is not available to this reactor');
  });

  it('sends method, lower-cased headers and a JSON body, and exposes a Response-like object', async () => {
    const seen: HostFetchRequest[] = [];
    const out = await sandbox.run({
      code: `module.exports = async () => {
        const res = await fetch('https://api.example.com/v1', { method: 'post', headers: { 'X-Key': 'k' }, body: { a: 1 } });
        const plain = await fetch('https://api.example.com/text', { body: 'raw', method: 'PUT', headers: { 'content-type': 'text/plain' } });
        return { status: res.status, ok: res.ok, statusText: res.statusText, ct: res.headers.get('Content-Type'), missing: res.headers.get('nope'),
          headerKeys: Object.keys(res.headers), json: await res.json(), text: await plain.text(), ok2: plain.ok };
      }`,
      req: { args: null, configuration: {} },
      host: {
        bt: null,
        fetch: async (request): Promise<HostFetchResponse> => {
          seen.push(request);
          return request.method === 'POST'
            ? { status: 201, statusText: 'Created', headers: { 'content-type': 'application/json' }, body: '{"id":7}' }
            : { status: 500, statusText: 'Oops', headers: {}, body: 'plain text' };
        },
      },
    });
    expect(seen).toEqual([
      { url: 'https://api.example.com/v1', method: 'POST', headers: { 'x-key': 'k', 'content-type': 'application/json' }, body: '{"a":1}' },
      { url: 'https://api.example.com/text', method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'raw' },
    ]);
    expect(out.result).toEqual({
      status: 201,
      ok: true,
      statusText: 'Created',
      ct: 'application/json',
      missing: null,
      headerKeys: ['content-type'],
      json: { id: 7 },
      text: 'plain text',
      ok2: false,
    });
  });

  it('turns a host fetch failure into a catchable TypeError with the message', async () => {
    const out = await sandbox.run({
      code: 'module.exports = async () => { try { await fetch("https://x.test") } catch (e) { return [e instanceof TypeError, e.message] } }',
      req: { args: null, configuration: {} },
      host: {
        bt: null,
        fetch: async () => {
          throw new Error("Host 'x.test' is not allowed: add it to reactors.egress.allowHosts");
        },
      },
    });
    expect(out.result).toEqual([true, "Host 'x.test' is not allowed: add it to reactors.egress.allowHosts"]);
  });
});

describe('QuickJsSandbox.run: timers and isolation', () => {
  it('provides setTimeout and clearTimeout', async () => {
    const out = await run(`module.exports = async () => {
      const order = [];
      const cancelled = setTimeout(() => order.push('cancelled'), 5);
      clearTimeout(cancelled);
      await new Promise((resolve) => setTimeout(() => { order.push('a'); resolve() }, 10));
      setTimeout((x) => order.push(x), 0, 'b');
      await new Promise((resolve) => setTimeout(resolve, 5));
      return order;
    }`);
    expect(out.result).toEqual(['a', 'b']);
  });

  it('does not leak globals or prototype changes between runs', async () => {
    await run('globalThis.leak = 1; Object.prototype.polluted = true; Array.prototype.push = null; module.exports = () => 1');
    const out = await run('module.exports = () => [typeof leak, typeof ({}).polluted, typeof [].push]');
    expect(out.result).toEqual(['undefined', 'undefined', 'function']);
  });

  it('exposes no host objects', async () => {
    const out = await run(`module.exports = () => {
      const g = Function('return this')();
      return [typeof process, typeof require, typeof module.require, typeof globalThis.process, typeof Buffer, typeof setImmediate,
        g === globalThis, typeof this.constructor.constructor('return typeof process')(), typeof std, typeof os];
    }`);
    expect(out.result).toEqual(['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined', true, 'string', 'undefined', 'undefined']);
  });
});

// The prelude installs these globals lazily (prelude.ts): each must behave like a plain global.
describe('QuickJsSandbox.run: globals the prelude provides', () => {
  const GLOBALS = [
    'AuthenticationError',
    'AuthorizationError',
    'BadRequestError',
    'InvalidPaymentMethodError',
    'RateLimitError',
    'ReactorRuntimeError',
    'ServiceUnavailableError',
    'CustomHttpResponseError',
    'console',
    'setTimeout',
    'clearTimeout',
    'fetch',
  ];

  it('are defined, not enumerable, and the same value on every read', async () => {
    const out = await run(`module.exports = () => ${JSON.stringify(GLOBALS)}.map((name) => [
      name, typeof globalThis[name], globalThis[name] === globalThis[name], Object.keys(globalThis).includes(name),
    ])`);
    expect(out.result).toEqual(GLOBALS.map((name) => [name, name === 'console' ? 'object' : 'function', true, false]));
  });

  it('can be replaced and deleted by reactor code, like any global', async () => {
    const out = await run(`module.exports = async () => {
      globalThis.fetch = () => 'mine';
      console = { log: () => 'replaced' };
      delete globalThis.setTimeout;
      return [fetch(), console.log(), typeof setTimeout, typeof clearTimeout];
    }`);
    expect(out.result).toEqual(['mine', 'replaced', 'undefined', 'function']);
  });

  it('keep working when reactor code freezes the global object first', async () => {
    const error = await reactorFailure(
      run(`module.exports = () => {
        Object.freeze(globalThis);
        console.log('still logging');
        throw new BadRequestError('frozen');
      }`),
    );
    expect(error).toMatchObject({ kind: 'BadRequestError', status: 400, message: 'frozen' });
  });

  it('give reactor code no way to the loader or the host bridge', async () => {
    const out = await run(`module.exports = () => {
      const getter = Object.getOwnPropertyDescriptor(globalThis, 'BadRequestError').get;
      return [typeof load, typeof hostCall, typeof hostFetch, typeof hostLog, typeof hostSleep, getter === undefined || getter() === BadRequestError];
    }`);
    expect(out.result).toEqual(['undefined', 'undefined', 'undefined', 'undefined', 'undefined', true]);
  });
});

describe('QuickJsSandbox.check', () => {
  it('accepts valid code without running it', () => {
    expect(() => sandbox.check('module.exports = async function (req) { while (true) {} }')).not.toThrow();
    expect(() => sandbox.check('throw new Error("not run")')).not.toThrow();
  });

  it('reports a syntax error with its line number', () => {
    const attempt = () => sandbox.check('module.exports = async (req) => {\n  const x = 1;\n  return x +;\n}');
    expect(attempt).toThrow(ValidationError);
    try {
      attempt();
    } catch (error) {
      expect((error as ValidationError).errors).toEqual({ code: ["SyntaxError: unexpected token in expression: ';' (line 3)"] });
    }
  });

  it('refuses code nested too deeply to compile, then keeps working', async () => {
    for (const depth of [3_000, 50_000]) {
      let error: unknown;
      try {
        sandbox.check(`module.exports = () => ${'['.repeat(depth)}${']'.repeat(depth)}`);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).errors).toEqual({ code: ['is nested too deeply to compile'] });
    }
    expect(() => sandbox.check('module.exports = () => [[[1]]]')).not.toThrow();
    expect((await run('module.exports = () => [[[1]]]')).result).toEqual([[[1]]]);
  });

  it('refuses ES module syntax and code over 256 KiB', () => {
    expect(() => sandbox.check('import x from "y"\nmodule.exports = x')).toThrow(ValidationError);
    expect(() => sandbox.check('export default 1')).toThrow(ValidationError);
    let error: unknown;
    try {
      sandbox.check(`// ${'x'.repeat(MAX_CODE_BYTES)}`);
    } catch (e) {
      error = e;
    }
    expect((error as ValidationError).errors).toEqual({ code: ['must be at most 262144 bytes'] });
  });
});
