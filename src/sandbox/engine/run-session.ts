/** The host side of one reactor run (quickjs-run.ts): drives its promise and serves the host operations it awaits. */
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSRuntime } from 'quickjs-emscripten';
import { ReactorError } from '../../errors/errors.js';
import { describeHostError, flattenApiTree, LogBuffer, type ApiEntry } from '../bridge.js';
import { isModuleFailure } from './module-failure.js';
import { wrapReactorSource } from './prelude.js';
import type { HostPort } from './host-port.js';
import type { PreparedContext } from './prepared-context.js';
import { memoryError, runtimeError, stackError, timeoutError, toReactorError, type SandboxErrorDescription } from '../reactor-outcome.js';
import type { HostFetch, SandboxLimits } from '../sandbox.js';
import type { EngineRunInput } from './quickjs-run.js';

/** Host operations (bt calls, fetches, timers) one run may have in flight at once. */
export const MAX_PENDING_HOST_OPS = 256;

interface Completion {
  id: number;
  ok: boolean;
  /** JSON text (for a failure, a JSON error description); undefined resolves to undefined. */
  payload: string | undefined;
}

export class RunSession implements HostPort {
  readonly logs: LogBuffer;
  readonly #runtime: QuickJSRuntime;
  readonly #context: QuickJSContext;
  readonly #prepared: PreparedContext;
  readonly #input: EngineRunInput;
  readonly #limits: SandboxLimits;
  readonly #deadline: number;
  readonly #api: Map<string, ApiEntry> | null;
  readonly #handles: QuickJSHandle[] = [];
  readonly #ops = new Map<number, QuickJSDeferredPromise>();
  readonly #completions: Completion[] = [];
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #nextOp = 0;
  #wake: (() => void) | undefined;
  #finished = false;

  constructor(prepared: PreparedContext, input: EngineRunInput, limits: SandboxLimits, deadline: number) {
    this.#prepared = prepared;
    this.#runtime = prepared.runtime;
    this.#context = prepared.context;
    this.#input = input;
    this.#limits = limits;
    this.#deadline = deadline;
    this.#api = input.host.bt === null ? null : flattenApiTree(input.host.bt);
    this.logs = new LogBuffer(limits.maxLogBytes);
  }

  #own(handle: QuickJSHandle): QuickJSHandle {
    this.#handles.push(handle);
    return handle;
  }

  async drive(interrupted: () => boolean): Promise<unknown> {
    const ctx = this.#context;
    const promise = this.#start();
    for (;;) {
      this.#applyCompletions();
      const jobs = this.#runtime.executePendingJobs();
      if (jobs.error) {
        this.#own(jobs.error);
        throw this.#failureOf(jobs.error, interrupted());
      }
      if (interrupted() || performance.now() > this.#deadline) throw timeoutError(this.#limits);
      const state = ctx.getPromiseState(promise);
      if (state.type === 'fulfilled') {
        this.#own(state.value);
        return this.#open(ctx.getString(state.value));
      }
      if (state.type === 'rejected') {
        this.#own(state.error);
        throw this.#failureOf(state.error, interrupted());
      }
      if (this.#completions.length > 0 || this.#runtime.hasPendingJob()) continue;
      if (this.#ops.size === 0) {
        throw runtimeError('Reactor returned a promise that never settles: it awaits nothing that can complete');
      }
      await this.#sleepUntilWoken();
    }
  }

  /** Compiles the code and calls the prelude's `run`; returns the handle of its promise. */
  #start(): QuickJSHandle {
    const ctx = this.#context;
    const input = this.#input;
    const factory = ctx.evalCode(wrapReactorSource(input.code), 'reactor.js', { type: 'global' });
    if (factory.error) throw this.#failureOf(this.#own(factory.error), false);
    this.#own(factory.value);
    const reqJson = this.#own(ctx.newString(input.reqJson));
    const btPaths = this.#api === null ? ctx.null : this.#own(ctx.newString(JSON.stringify([...this.#api.keys()])));
    const maxResultBytes = this.#own(ctx.newNumber(this.#limits.maxResultBytes));
    const promise = ctx.callFunction(this.#prepared.run, ctx.undefined, factory.value, reqJson, btPaths, maxResultBytes);
    if (promise.error) throw this.#failureOf(this.#own(promise.error), false);
    return this.#own(promise.value);
  }

  // HostPort: called from inside QuickJS, so each only records work and returns a promise handle.

  call(path: string, argsJson: string): QuickJSHandle {
    const entry = this.#api?.get(path);
    return this.#startOp(
      async () => {
        if (entry === undefined) throw new TypeError(`bt.${path} is not a function`);
        const args: unknown = JSON.parse(argsJson);
        const value: unknown = await entry.fn.apply(entry.parent, Array.isArray(args) ? args : []);
        return value === undefined ? undefined : JSON.stringify(value);
      },
      (error) => describeHostError(error, `bt.${path}`),
    );
  }

  fetch(requestJson: string): QuickJSHandle {
    const fetchImpl = this.#input.host.fetch;
    return this.#startOp(
      () => fetchThrough(fetchImpl, requestJson),
      (error) => ({ message: error instanceof Error ? error.message : 'fetch failed' }),
    );
  }

  log(level: string, text: string): boolean {
    return this.logs.add(level, text);
  }

  sleep(ms: number): QuickJSHandle {
    return this.#startOp(
      () => this.#timer(ms),
      () => ({ message: 'timer failed' }),
    );
  }

  /**
   * Starts host work and returns the handle of a QuickJS promise the drive loop settles. The work
   * starts in a microtask, off the interpreter's stack: host code never runs nested inside QuickJS.
   */
  #startOp(work: () => Promise<string | undefined>, describe: (error: unknown) => object): QuickJSHandle {
    const ctx = this.#context;
    const deferred = ctx.newPromise();
    if (this.#ops.size >= MAX_PENDING_HOST_OPS) {
      rejectWith(ctx, deferred, { name: 'Error', status: 500, message: `Too many pending host calls (limit ${MAX_PENDING_HOST_OPS})` });
      return deferred.handle;
    }
    const id = ++this.#nextOp;
    this.#ops.set(id, deferred);
    Promise.resolve()
      .then(work)
      .then(
        (payload) => this.#complete({ id, ok: true, payload }),
        (error: unknown) => this.#complete({ id, ok: false, payload: safeDescribe(describe, error) }),
      );
    // Returned to QuickJS, which takes its own reference; the resolvers stay ours until settled.
    return deferred.handle;
  }

  #complete(completion: Completion): void {
    if (this.#finished) return;
    this.#completions.push(completion);
    this.#wake?.();
  }

  #applyCompletions(): void {
    const ctx = this.#context;
    for (const { id, ok, payload } of this.#completions.splice(0)) {
      const deferred = this.#ops.get(id);
      if (deferred === undefined) continue;
      this.#ops.delete(id);
      if (payload !== undefined && payload.length > this.#limits.memoryBytes) {
        rejectWith(ctx, deferred, { name: 'Error', status: 500, message: 'Host result is larger than the sandbox memory limit' });
        continue;
      }
      const value = payload === undefined ? undefined : ctx.newString(payload);
      try {
        if (ok) deferred.resolve(value);
        else deferred.reject(value);
      } catch (error) {
        // Settling allocates inside the runtime; past the memory limit it fails.
        if (isModuleFailure(error)) throw error;
        throw memoryError(this.#limits);
      } finally {
        value?.dispose();
      }
    }
  }

  #timer(ms: number): Promise<undefined> {
    return new Promise((resolve) => {
      // A timer due after the deadline can never fire in time: leave it pending, the deadline wins.
      if (!(ms >= 0) || performance.now() + ms > this.#deadline) return;
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        resolve(undefined);
      }, ms);
      this.#timers.add(timer);
    });
  }

  #sleepUntilWoken(): Promise<void> {
    return new Promise<void>((resolve) => {
      const remaining = Math.max(0, this.#deadline - performance.now()) + 1;
      const timer = setTimeout(done, remaining);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    }).then(() => {
      this.#wake = undefined;
    });
  }

  /** Opens the run's result envelope: 'R' + JSON result, or 'E' + JSON error description. */
  #open(envelope: string): unknown {
    const body = envelope.slice(1);
    const tooLarge = Buffer.byteLength(body) > this.#limits.maxResultBytes;
    if (envelope.startsWith('R')) {
      if (tooLarge) throw runtimeError(`Reactor result exceeds the limit of ${this.#limits.maxResultBytes} bytes`);
      return JSON.parse(body);
    }
    if (tooLarge) throw runtimeError(`Reactor error exceeds the limit of ${this.#limits.maxResultBytes} bytes`);
    throw toReactorError(JSON.parse(body) as SandboxErrorDescription, this.#limits);
  }

  /**
   * The error for a value QuickJS threw past the prelude's own catch: an interrupt (uncatchable),
   * running out of memory while reporting, or a syntax error in the reactor code.
   */
  #failureOf(error: QuickJSHandle, interrupted: boolean): ReactorError {
    if (interrupted) return timeoutError(this.#limits);
    const ctx = this.#context;
    if (ctx.typeof(error) !== 'object') return runtimeError('Reactor failed');
    const read = (name: string): string | number | undefined => {
      const h = ctx.getProp(error, name);
      try {
        const type = ctx.typeof(h);
        return type === 'string' ? ctx.getString(h) : type === 'number' ? ctx.getNumber(h) : undefined;
      } finally {
        h.dispose();
      }
    };
    const name = read('name');
    const message = read('message');
    if (message === 'out of memory') return memoryError(this.#limits);
    if (message === 'stack overflow') return stackError();
    const text = `${typeof name === 'string' && name !== '' ? name : 'Error'}: ${typeof message === 'string' ? message : ''}`;
    const line = name === 'SyntaxError' ? read('lineNumber') : undefined;
    return runtimeError(typeof line === 'number' ? `${text} (line ${line})` : text);
  }

  /** Frees every handle of the run; pending host work is abandoned and its results ignored. */
  dispose(): void {
    this.#finished = true;
    this.#prepared.port = null;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const deferred of this.#ops.values()) deferred.dispose();
    this.#ops.clear();
    for (const handle of this.#handles.reverse()) if (handle.alive) handle.dispose();
    this.#handles.length = 0;
  }
}

function rejectWith(ctx: QuickJSContext, deferred: QuickJSDeferredPromise, description: object): void {
  const reason = ctx.newString(JSON.stringify(description));
  try {
    deferred.reject(reason);
  } finally {
    reason.dispose();
  }
}

async function fetchThrough(fetchImpl: HostFetch | null, requestJson: string): Promise<string> {
  if (fetchImpl === null) throw new Error('fetch is not available to this reactor');
  const request = JSON.parse(requestJson) as Parameters<HostFetch>[0];
  const response = await fetchImpl(request);
  return JSON.stringify({
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
    body: response.body,
  });
}

/** A host error's description as JSON; a description that itself fails becomes a generic one. */
function safeDescribe(describe: (error: unknown) => object, error: unknown): string {
  try {
    return JSON.stringify(describe(error));
  } catch {
    return '{"name":"Error","status":500,"message":"Host call failed"}';
  }
}
