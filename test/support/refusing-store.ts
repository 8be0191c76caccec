import { ServiceUnavailableError } from '../../src/errors/errors.js';
import type { Store } from '../../src/storage/store.js';

/**
 * A real store whose calls are refused, as a store that lost its database refuses them (a
 * ServiceUnavailableError), while `refuses(method, args)` says so; every other call goes through.
 */
export function refusingStore(inner: Store, refuses: (method: string, args: unknown[]) => boolean): Store {
  return new Proxy(inner, {
    get(target, property) {
      // Reflect.get on the target: the store's own fields are read from the store (ARCHITECTURE.md).
      const value = Reflect.get(target, property) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (typeof property === 'string' && refuses(property, args)) return Promise.reject(new ServiceUnavailableError('The database is unavailable (refused by the test)'));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
