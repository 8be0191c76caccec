/**
 * The QuickJS engine on the calling thread: what each sandbox worker runs (sandbox-worker.ts), and
 * what `check` uses on the main thread. Counters of runtimes and modules are only visible here.
 */
import { describe, expect, it } from 'vitest';
import { ReactorError, ValidationError } from '../../src/errors/errors.js';
import { MAX_UNFREED } from '../../src/sandbox/engine/context-pool.js';
import { createQuickJsEngine } from '../../src/sandbox/engine/quickjs-engine.js';
import { DEFAULT_SANDBOX_LIMITS, type SandboxHost } from '../../src/sandbox/sandbox.js';

const NO_HOST: SandboxHost = { bt: null, fetch: null };

describe('QuickJsEngine.check', () => {
  it('answers 503 rather than compile again on a module that keeps failing, until it is replaced', async () => {
    const own = await createQuickJsEngine({ poolSize: 0 });
    const deep = `module.exports = ${'['.repeat(50_000)}${']'.repeat(50_000)}`;
    const outcomes: string[] = [];
    for (let i = 0; i < 6; i++) {
      try {
        own.check(deep);
      } catch (e) {
        outcomes.push(e instanceof ValidationError ? 'invalid' : `${(e as ReactorError).status}`);
      }
    }
    expect(outcomes).toEqual(['invalid', 'invalid', 'invalid', 'invalid', '503', '503']);
    await own.run({ code: 'module.exports = () => 1', req: { args: null, configuration: {} }, host: NO_HOST }); // waits for the new module
    expect(() => own.check('module.exports = () => 1')).not.toThrow();
    expect(own.stats().retiredModules).toBe(1);
  });
});

describe('QuickJsEngine: module failures', () => {
  it('retires and replaces its WebAssembly module when nesting exhausts the host stack inside the interpreter', async () => {
    const engine = await createQuickJsEngine({ limits: { memoryBytes: 16 * 1024 * 1024 } });
    for (const code of [
      'module.exports = () => { let a = []; for (let i = 0; i < 50000; i++) a = [a]; return JSON.stringify(a).length }',
      'module.exports = () => eval("[".repeat(50000) + "]".repeat(50000))',
    ]) {
      const error = await engine.run({ code, req: { args: null, configuration: {} }, host: NO_HOST }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ReactorError);
      expect((error as ReactorError).message).toMatch(/stack size limit/);
      const healthy = await engine.run({ code: 'module.exports = () => 42', req: { args: null, configuration: {} }, host: NO_HOST });
      expect(healthy.result).toBe(42);
    }
    // Each time the module was retired and replaced, not reused.
    expect(engine.stats().retiredModules).toBe(2);
  });
});

describe('QuickJsEngine: resources', () => {
  it('disposes every runtime: 2,000 runs leave nothing behind and memory does not grow', async () => {
    const own = await createQuickJsEngine({ poolSize: 0 });
    const code = `module.exports = async (req) => {
      console.log('run', req.args.i);
      const t = await req.bt.tokens.retrieve(String(req.args.i));
      return { raw: t, big: 'x'.repeat(1000) };
    }`;
    const host: SandboxHost = { fetch: null, bt: { tokens: { retrieve: async (id: unknown) => ({ id }) } } };
    const batch = async (from: number, count: number) => {
      for (let i = from; i < from + count; i++) {
        const out = await own.run({ code, req: { args: { i }, configuration: {} }, host });
        expect(out.result).toMatchObject({ raw: { id: String(i) } });
      }
    };
    await batch(0, 200);
    const memoryAfterWarmup = own.stats().wasmMemoryBytes;
    await batch(200, 1800);
    await own.poolFilled(); // ended runs' contexts are freed in idle turns, after their results went out
    const stats = own.stats();
    expect(stats.runs).toBe(2000);
    expect(stats.runtimesCreated).toBe(2000);
    expect(stats.runtimesDisposed).toBe(2000);
    expect(stats.wasmMemoryBytes).toBe(memoryAfterWarmup);
  });

  it('disposes runtimes of failed runs too', async () => {
    const own = await createQuickJsEngine({ poolSize: 0, limits: { timeoutMs: 200 } });
    const failing = [
      'module.exports = () => { throw 1 }',
      'module.exports = () => new Promise(() => {})',
      'module.exports = async (req) => { await req.bt.never() }',
      'module.exports = () => { for (;;) {} }',
      'let x = ;',
    ];
    const host: SandboxHost = { fetch: null, bt: { never: () => new Promise(() => undefined) } };
    for (const code of failing) {
      await expect(own.run({ code, req: { args: null, configuration: {} }, host })).rejects.toBeInstanceOf(ReactorError);
    }
    await own.poolFilled();
    const stats = own.stats();
    expect(stats.runtimesCreated).toBe(failing.length);
    expect(stats.runtimesDisposed).toBe(failing.length);
  });

  it('keeps prepared contexts in a pool and still uses each for one run only', async () => {
    const pooled = await createQuickJsEngine({ poolSize: 2 });
    await pooled.poolFilled(); // the pool fills in idle turns
    expect(pooled.stats().pooledContexts).toBe(2);
    const first = await pooled.run({ code: 'globalThis.mark = 1; module.exports = () => typeof mark', req: { args: null, configuration: {} }, host: NO_HOST });
    const second = await pooled.run({ code: 'module.exports = () => typeof mark', req: { args: null, configuration: {} }, host: NO_HOST });
    expect([first.result, second.result]).toEqual(['number', 'undefined']);
    await pooled.poolFilled();
    const stats = pooled.stats();
    expect(stats.runtimesCreated - stats.runtimesDisposed).toBe(stats.pooledContexts);
  });

  it("frees an ended run's context in an idle turn after its result is out, and lets at most MAX_UNFREED wait", async () => {
    const engine = await createQuickJsEngine({ poolSize: 1 });
    const run = () => engine.run({ code: 'module.exports = () => 1', req: { args: null, configuration: {} }, host: NO_HOST });
    const waiting = () => {
      const { runtimesCreated, runtimesDisposed, pooledContexts } = engine.stats();
      return runtimesCreated - runtimesDisposed - pooledContexts;
    };
    await engine.poolFilled();
    await run();
    expect(waiting()).toBe(1); // the run's result came before its context was freed
    await engine.poolFilled();
    expect(waiting()).toBe(0);
    // Runs that all end within one turn: past MAX_UNFREED, a context is freed at once.
    await Promise.all(Array.from({ length: MAX_UNFREED + 4 }, run));
    expect(waiting()).toBe(MAX_UNFREED);
    await engine.poolFilled();
    expect(waiting()).toBe(0);
    expect(engine.stats().runtimesCreated).toBe(engine.stats().runs + 1);
  });

  it('rejects an invalid pool size', async () => {
    await expect(createQuickJsEngine({ poolSize: -1 })).rejects.toBeInstanceOf(ValidationError);
  });

  it('documents its defaults', () => {
    expect(DEFAULT_SANDBOX_LIMITS).toEqual({
      memoryBytes: 64 * 1024 * 1024,
      timeoutMs: 10_000,
      maxStackBytes: 128 * 1024,
      maxResultBytes: 1024 * 1024,
      maxLogBytes: 64 * 1024,
    });
    expect(Object.isFrozen(DEFAULT_SANDBOX_LIMITS)).toBe(true);
  });
});
