/**
 * Hostile reactor code: each case must fail cleanly with the right ReactorError, and the same
 * sandbox must run a normal reactor afterwards.
 *
 * Only the cases that must end at the deadline get the short TIMEOUT_MS; every other run has a
 * generous limit, so a slow machine cannot turn a normal run into a timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReactorError } from '../../src/errors/errors.js';
import { createEgressFetch } from '../../src/sandbox/egress/egress-fetch.js';
import { createQuickJsSandbox, type QuickJsSandbox } from '../../src/sandbox/quickjs-sandbox.js';
import type { SandboxHost, SandboxLimits } from '../../src/sandbox/sandbox.js';

const TIMEOUT_MS = 300;
const MEMORY_BYTES = 16 * 1024 * 1024;
/** Cases that must end by the deadline run with TIMEOUT_MS. */
const SHORT = { timeoutMs: TIMEOUT_MS };

let sandbox: QuickJsSandbox;
beforeAll(async () => {
  sandbox = await createQuickJsSandbox({ limits: { timeoutMs: 30_000, memoryBytes: MEMORY_BYTES } });
});
afterAll(async () => {
  await sandbox.close();
});

const NO_HOST: SandboxHost = { bt: null, fetch: null };

function run(code: string, host: SandboxHost = NO_HOST, limits?: Partial<SandboxLimits>) {
  return sandbox.run({ code, req: { args: { n: 2 }, configuration: {} }, host, ...(limits ? { limits } : {}) });
}

async function failure(code: string, host?: SandboxHost, limits?: Partial<SandboxLimits>): Promise<ReactorError> {
  const error = await run(code, host, limits).then(
    () => {
      throw new Error('expected the run to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ReactorError);
  return error as ReactorError;
}

/** The sandbox still works after a hostile run. */
async function expectHealthy(): Promise<void> {
  const out = await sandbox.run({
    code: 'module.exports = async (req) => { console.log("ok"); const t = await req.bt.get(req.args.n); return { raw: t * 2 } }',
    req: { args: { n: 21 }, configuration: {} },
    host: { fetch: null, bt: { get: async (n: unknown) => n } },
  });
  expect(out).toEqual({ result: { raw: 42 }, logs: ['ok'], logsTruncated: false });
}

const TIMEOUT_MESSAGE = `Reactor exceeded its time limit of ${TIMEOUT_MS} ms`;
const MEMORY_MESSAGE = `Reactor exceeded its memory limit of ${MEMORY_BYTES} bytes`;

describe('hostile reactors: CPU and time', () => {
  it.each([
    ['a top-level infinite loop', 'while (true) {}'],
    ['an infinite loop in the function', 'module.exports = () => { while (true) {} }'],
    ['an infinite async loop', 'module.exports = async () => { for (;;) await null }'],
    ['a loop that catches everything', 'module.exports = () => { for (;;) { try { while (true) {} } catch (e) {} } }'],
    ['catastrophic regex backtracking', 'module.exports = () => /(a+)+$/.test("a".repeat(40) + "b")'],
    ['a microtask flood', 'module.exports = () => new Promise(() => { const f = () => Promise.resolve().then(f); f() })'],
    // Each call is one interpreter "tick": with QuickJS's default of a check per 10,000 ticks these
    // ran for about a minute past a 300 ms deadline (see interrupt-tuner.ts).
    ['a loop of expensive built-in calls', 'module.exports = () => { const a = Array.from({ length: 20000 }, (_, i) => i); for (;;) a.sort() }'],
    ['a loop of large joins', 'module.exports = () => { const a = Array.from({ length: 100000 }, (_, i) => i); for (;;) a.join(",") }'],
  ])('stops %s at the deadline', async (_name, code) => {
    const error = await failure(code, NO_HOST, SHORT);
    expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500, message: TIMEOUT_MESSAGE });
    await expectHealthy();
  });

  it('fails a promise that can never settle without waiting for the deadline', async () => {
    const error = await failure('module.exports = () => new Promise(() => {})');
    expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500 });
    expect(error.message).toMatch(/never settles/);
    await expectHealthy();
  });

  it('times out a bt call that never resolves', async () => {
    const host: SandboxHost = { fetch: null, bt: { tokens: { retrieve: () => new Promise(() => undefined) } } };
    const error = await failure('module.exports = async (req) => req.bt.tokens.retrieve("x")', host, SHORT);
    expect(error).toMatchObject({ status: 500, message: TIMEOUT_MESSAGE });
    await expectHealthy();
  });

  it('times out a timer set beyond the deadline', async () => {
    const error = await failure('module.exports = () => new Promise((r) => setTimeout(r, 60_000))', NO_HOST, SHORT);
    expect(error.message).toBe(TIMEOUT_MESSAGE);
    await expectHealthy();
  });

  it('bounds the host calls a run may have in flight', async () => {
    let started = 0;
    const host: SandboxHost = {
      fetch: null,
      bt: {
        never: () => {
          started++;
          return new Promise(() => undefined);
        },
      },
    };
    const out = await run(
      `module.exports = async (req) => {
        const results = await Promise.allSettled(Array.from({ length: 1000 }, () => req.bt.never()).slice(256, 260));
        return results.map((r) => r.status + ':' + r.reason.message);
      }`,
      host,
    );
    expect(out.result).toEqual(Array(4).fill('rejected:Too many pending host calls (limit 256)'));
    expect(started).toBe(256);
    await expectHealthy();
  });
});

describe('hostile reactors: memory and stack', () => {
  it.each([
    ['string doubling with repeat', 'module.exports = () => { let s = "x"; for (;;) s = s.repeat(2) }'],
    ['a huge array', 'module.exports = () => new Array(2 ** 28).fill(0)'],
    ['a huge string', 'module.exports = () => "z".repeat(64 * 1024 * 1024).length'],
  ])('stops %s at the memory limit', async (_name, code) => {
    const error = await failure(code);
    expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500, message: MEMORY_MESSAGE });
    await expectHealthy();
  });

  // QuickJS slows down sharply just under its memory limit (measured: 16 MiB of 100 KB strings
  // takes 17 s to reach it), so gradual growth usually ends at the deadline first. Either is a clean 500.
  it.each([
    ['many dense arrays', 'module.exports = () => { const a = []; for (;;) a.push(Array.from({ length: 10000 }, (_, i) => i)) }'],
    ['many strings', 'module.exports = () => { const a = []; for (let i = 0; ; i++) a.push("x".repeat(100000) + i) }'],
    ['many small objects', 'module.exports = () => { const a = []; for (let i = 0; ; i++) a.push({ i, s: "v" + i }) }'],
    ['a bomb caught and retried', 'module.exports = () => { const keep = []; for (;;) { try { keep.push("y".repeat(1 << 20) + keep.length) } catch (e) {} } }'],
  ])('stops %s by memory or time, whichever comes first', async (_name, code) => {
    const error = await failure(code, NO_HOST, SHORT);
    expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500 });
    expect([MEMORY_MESSAGE, TIMEOUT_MESSAGE]).toContain(error.message);
    await expectHealthy();
  });

  it('reports the engine limit on string length as a runtime error', async () => {
    // Concatenation builds ropes, so doubling reaches QuickJS's 2^30 length cap before the memory limit.
    const error = await failure('module.exports = () => { let s = "xxxxxxxx"; for (;;) s = s + s }');
    expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500, message: 'string too long (line 1)' });
    await expectHealthy();
  });

  it('stops deep recursion with a stack error', async () => {
    for (const code of [
      'module.exports = () => { const f = (n) => f(n + 1) + 1; return f(0) }',
      'module.exports = () => { const o = { get x() { return this.x } }; return o.x }',
      'module.exports = async () => { const f = async () => f(); return f() }',
    ]) {
      const error = await failure(code);
      expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500 });
      expect(error.message).toMatch(/stack size limit/);
    }
    await expectHealthy();
  });

  // The module retirement behind this recovery is tested on the engine (quickjs-engine.test.ts).
  it('recovers when nesting exhausts the host stack inside the interpreter', async () => {
    for (const code of [
      'module.exports = () => { let a = []; for (let i = 0; i < 50000; i++) a = [a]; return JSON.stringify(a).length }',
      'module.exports = () => eval("[".repeat(50000) + "]".repeat(50000))',
    ]) {
      const error = await failure(code);
      expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500 });
      expect(error.message).toMatch(/stack size limit/);
      await expectHealthy();
    }
  });

  it('rejects an oversized result', async () => {
    const error = await failure('module.exports = () => "x".repeat(2 * 1024 * 1024)');
    expect(error.message).toBe('Reactor result exceeds the limit of 1048576 bytes');
    await expectHealthy();
  });

  it('bounds log spam', async () => {
    const out = await run('module.exports = () => { for (let i = 0; i < 20000; i++) console.log("spam".repeat(100)); return "done" }');
    expect(out.result).toBe('done');
    expect(out.logsTruncated).toBe(true);
    expect(Buffer.byteLength(out.logs.join(''))).toBeLessThanOrEqual(64 * 1024);
    await expectHealthy();
  });
});

describe('hostile reactors: escapes', () => {
  it('finds no host objects by any route', async () => {
    const out = await run(`module.exports = async function () {
      const probes = {};
      probes.process = typeof process;
      probes.require = typeof require;
      probes.globalProcess = typeof globalThis.process;
      probes.functionThis = Function('return this')() === globalThis;
      probes.ctorCtor = (() => { try { return typeof this.constructor.constructor('return process')() } catch (e) { return 'threw ' + e.name } })();
      probes.ctorThis = this.constructor.constructor('return this')() === globalThis;
      probes.asyncCtor = await (async function () {}).constructor('return typeof process')();
      probes.evalProcess = typeof eval('typeof process === "undefined" ? undefined : process');
      probes.hostBridge = [typeof hostCall, typeof hostFetch, typeof hostLog, typeof hostSleep].join();
      probes.globals = Object.getOwnPropertyNames(globalThis).filter((n) => /^(process|require|module|exports|std|os|Buffer|global|setImmediate|queueMicrotask)$|^host/.test(n)).join();
      return probes;
    }`);
    expect(out.result).toEqual({
      process: 'undefined',
      require: 'undefined',
      globalProcess: 'undefined',
      functionThis: true,
      ctorCtor: 'threw ReferenceError',
      ctorThis: true,
      asyncCtor: 'undefined',
      evalProcess: 'undefined',
      hostBridge: 'undefined,undefined,undefined,undefined',
      globals: '',
    });
  });

  it('cannot import modules', async () => {
    const out = await run('module.exports = async () => { try { await import("node:fs"); return "imported" } catch (e) { return "refused" } }');
    expect(out.result).toBe('refused');
    const error = await failure('import fs from "node:fs"\nmodule.exports = () => fs');
    expect(error.message).toMatch(/^SyntaxError/);
  });

  it('cannot pollute host prototypes through bt results or its result', async () => {
    const host: SandboxHost = {
      fetch: null,
      bt: { tokens: { retrieve: async () => JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted2": true}}}') } },
    };
    const out = await run(
      `module.exports = async (req) => {
        const t = await req.bt.tokens.retrieve('x');
        const merged = Object.assign({}, t);
        const deep = {};
        for (const k of Object.keys(t)) deep[k] = t[k];
        Object.prototype.inside = true;
        return JSON.parse('{"__proto__": {"polluted3": true}}');
      }`,
      host,
    );
    const plain: Record<string, unknown> = {};
    expect(plain.polluted).toBeUndefined();
    expect(plain.polluted2).toBeUndefined();
    expect(plain.polluted3).toBeUndefined();
    expect(plain.inside).toBeUndefined();
    expect(Object.getPrototypeOf(out.result)).toBe(Object.prototype);
    expect((out.result as Record<string, unknown>).polluted3).toBeUndefined();
    await expectHealthy();
  });

  it('cannot break the bridge by replacing built-ins', async () => {
    const host: SandboxHost = { fetch: null, bt: { echo: async (v: unknown) => v } };
    const out = await run(
      `module.exports = async (req) => {
        JSON.stringify = () => { throw new Error('hijacked') };
        JSON.parse = () => ({ hijacked: true });
        Object.defineProperty = () => { throw new Error('hijacked') };
        Error.prototype.toString = () => { throw new Error('hijacked') };
        const r = await req.bt.echo({ a: 1 });
        console.log(r);
        return { r };
      }`,
      host,
    );
    expect(out.result).toEqual({ r: { a: 1 } });
    expect(out.logs).toEqual(['{"a":1}']);
  });
});

describe('hostile reactors: thrown values and results', () => {
  it.each([
    ['throw 42', '42'],
    ['throw null', 'null'],
    ['throw {}', '[object Object]'],
    ['throw Symbol("s")', 'Symbol(s)'],
    ['throw { get message() { throw new Error("getter") } }', 'Reactor threw a value that cannot be described'],
    ['throw new Proxy({}, { get() { throw new Error("trap") }, getPrototypeOf() { throw new Error("trap") } })', 'Reactor threw a value that cannot be described'],
    ['throw Object.create(null)', 'Reactor threw a value that cannot be described'],
  ])('%s becomes a 500 ReactorRuntimeError', async (statement, message) => {
    const error = await failure(`module.exports = () => { ${statement} }`);
    expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500, message });
    await expectHealthy();
  });

  it.each([
    ['a cyclic object', '{ const a = { b: {} }; a.b.a = a; return a }', /circular/],
    ['a function', 'return { f() {} }', /function at key "f"/],
    ['a BigInt', 'return { n: 10n }', /bigint at key "n"/],
    ['a symbol', 'return [Symbol("s")]', /symbol/],
    ['a top-level function', 'return () => 1', /function/],
    ['a throwing toJSON', 'return { toJSON() { throw new Error("nope") } }', /nope/],
  ])('returning %s is a 500 not-serializable error', async (_name, body, pattern) => {
    const error = await failure(`module.exports = () => { ${body} }`);
    expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500 });
    expect(error.message).toMatch(/^Reactor result is not JSON-serializable: /);
    expect(error.message).toMatch(pattern);
    await expectHealthy();
  });
});

describe('hostile reactors: egress to private networks', () => {
  const egress = createEgressFetch({ allowHosts: ['127.0.0.1', '169.254.169.254', '10.0.0.1', 'localhost'], allowPrivateNetwork: false });
  it.each(['http://127.0.0.1:1/', 'http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'http://localhost/', 'http://[::ffff:127.0.0.1]/'])(
    'refuses fetch(%s) without allowPrivateNetwork',
    async (url) => {
      const out = await run(`module.exports = async () => { try { await fetch(${JSON.stringify(url)}); return 'fetched' } catch (e) { return e.message } }`, {
        bt: null,
        fetch: egress,
      });
      expect(out.result).toMatch(/is not allowed/);
      expect(out.result).toMatch(/reactors\.egress\.(allowPrivateNetwork|allowHosts)/);
      const error = await failure(`module.exports = () => fetch(${JSON.stringify(url)})`, { bt: null, fetch: egress });
      expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500 });
      expect(error.message).toMatch(/is not allowed/);
      await expectHealthy();
    },
  );
});
