/** Building field errors (FieldErrors) by hand, for checks that valibot's schemas do not cover. */
import type { FieldErrors } from '../errors/errors.js';

/**
 * A key as it may appear in a field path: identifiers only, so a stray key that is really a value
 * (a card number used as a key) is never echoed. Returns null for anything else.
 */
export function printableKey(key: string): string | null {
  return /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/.test(key) ? key : null;
}

/** Adds `message` to `field`'s messages. */
export function addError(errors: FieldErrors, field: string, message: string): void {
  // Own properties only: a field named `__proto__` (an unknown attribute of the body) must not
  // reach Object.prototype, nor set the prototype of `errors` by assignment.
  let list = Object.hasOwn(errors, field) ? errors[field] : undefined;
  if (list === undefined) {
    list = [];
    Object.defineProperty(errors, field, { value: list, enumerable: true, writable: true, configurable: true });
  }
  if (!list.includes(message)) list.push(message);
}

/** Adds every message of `more` into `errors`. */
export function mergeInto(errors: FieldErrors, more: FieldErrors): void {
  for (const [field, messages] of Object.entries(more)) for (const m of messages) addError(errors, field, m);
}
