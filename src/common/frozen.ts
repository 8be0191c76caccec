/**
 * Deep freezing, for values shared between tokens (parsed masks): anything keyed on such a value's
 * identity (a render plan, its JSON text) stays right only if no part of it can change.
 */

/** Freezes a JSON value and everything in it; returns it. */
export function deepFreeze<T>(value: T): T {
  // Children too when the value itself is already frozen: a shallow freeze leaves them mutable.
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** True when the value and everything in it are frozen (a frozen object cannot be unfrozen). */
export function isDeepFrozen(value: object): boolean {
  if (!Object.isFrozen(value)) return false;
  for (const child of Object.values(value)) {
    if (typeof child === 'object' && child !== null && !isDeepFrozen(child)) return false;
  }
  return true;
}
