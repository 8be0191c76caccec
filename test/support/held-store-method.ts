import type { Store } from '../../src/storage/store.js';

type AsyncMethod = { [K in keyof Store]: Store[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof Store];

/**
 * A store whose `method` counts its calls once the store has answered them (on PostgreSQL a query
 * only sent may still see a change made after it), and whose next answer can be held back: for
 * tests of a lookup shared by concurrent callers, and of one begun before a change.
 */
export function heldStoreMethod(inner: Store, method: AsyncMethod) {
  let answered = 0;
  let next: Promise<void> | undefined;
  let release = () => {};
  const store = new Proxy(inner, {
    get(target, property, receiver) {
      if (property === method) {
        return async (...args: unknown[]) => {
          const answer = await (target[method] as (...a: unknown[]) => Promise<unknown>)(...args);
          // Only the next answer after holdNext() waits; calls made meanwhile answer at once.
          const gate = next;
          next = undefined;
          answered++;
          await gate;
          return answer;
        };
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    store,
    /** Calls the store has answered since the last reset. */
    get answered() {
      return answered;
    },
    reset() {
      answered = 0;
    },
    /** Holds the next answer back until release(). */
    holdNext() {
      next = new Promise<void>((resolve) => (release = resolve));
    },
    release: () => release(),
    /** Resolves once the store has answered `count` calls since the last reset. */
    async answeredAtLeast(count: number) {
      while (answered < count) await new Promise((resolve) => setImmediate(resolve));
    },
  };
}
