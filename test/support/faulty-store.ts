import { ServiceUnavailableError } from '../../src/errors/errors.js';
import type { Store } from '../../src/storage/store.js';

type StoreMethod = Exclude<{ [K in keyof Store]: Store[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof Store], undefined>;

/**
 * A real store whose chosen methods reject (a 503, as the stores raise for a full disk or a lost
 * connection) while `failing` says so: no mock, every other call and every call after recovery
 * reaches the real store. `rejected` counts the refusals; `nextRejection` resolves at the next one.
 */
export function faultyStore(inner: Store, methods: readonly StoreMethod[], failing: (method: StoreMethod) => boolean = () => true) {
  let rejected = 0;
  const waiters: (() => void)[] = [];
  const state = { on: true };
  const store = new Proxy(inner, {
    get(target, property, receiver) {
      if (methods.includes(property as StoreMethod)) {
        const method = property as StoreMethod;
        return async (...args: unknown[]) => {
          if (state.on && failing(method)) {
            rejected++;
            for (const wake of waiters.splice(0)) wake();
            throw new ServiceUnavailableError('The database cannot be written now; retry the request shortly');
          }
          return (target[method] as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      }
      // Reflect.get on the target: the store's own fields are read from the store (ARCHITECTURE.md).
      const value = Reflect.get(target, property, receiver === store ? target : receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    store,
    get rejected() {
      return rejected;
    },
    /** Stops (false) or resumes (true) the faults. */
    fail(on: boolean) {
      state.on = on;
    },
    nextRejection(): Promise<void> {
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}

/**
 * Collects the process's unhandled rejections while a test runs (vitest reports them as errors
 * too; this makes the test itself fail on one). `check()` lets one event-loop turn pass, since
 * Node reports a rejection once the microtasks have run.
 */
export function watchUnhandledRejections() {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', listener);
  return {
    async check(): Promise<unknown[]> {
      await new Promise<void>((resolve) => setImmediate(resolve));
      return seen;
    },
    stop() {
      process.off('unhandledRejection', listener);
    },
  };
}
