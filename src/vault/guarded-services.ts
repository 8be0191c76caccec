import { type CallerMaker, requireMintedCaller } from '../auth/caller-brand.js';

/**
 * A service as the vault hands it out: every method first checks that its Caller (the first
 * argument of every service method) is one the vault made (requireMintedCaller), then runs on the
 * service itself. The one place every operation of every service passes, so a service added to
 * the Vault is guarded without a line of its own (test/auth/forged-callers.test.ts walks them all).
 * Services call each other directly, with Callers they were given or minted, past this guard.
 */
export function guardService<T extends object>(service: T, accepted: readonly CallerMaker[]): T {
  const guarded = new Map<PropertyKey, unknown>();
  return new Proxy(service, {
    get(target, property) {
      // The service as receiver: its methods read private fields, which a Proxy does not carry.
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      let method = guarded.get(property);
      if (method === undefined) {
        const original = value as (...args: unknown[]) => unknown;
        method = (caller: unknown, ...rest: unknown[]) => refusal(caller, accepted) ?? original.call(target, caller, ...rest);
        guarded.set(property, method);
      }
      return method;
    },
    set() {
      return false;
    },
    defineProperty() {
      return false;
    },
  });
}

/**
 * Undefined when `caller` is accepted, else the refusal as a rejected promise: every service
 * operation answers a promise, so a refused Caller is a rejection like any other refusal. Also for
 * a lone operation taking the Caller first (`vault.proxy`).
 */
export function refusal(caller: unknown, accepted: readonly CallerMaker[]): Promise<never> | undefined {
  try {
    requireMintedCaller(caller, accepted);
    return undefined;
  } catch (error) {
    return Promise.reject(error);
  }
}
