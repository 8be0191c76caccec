import { ValidationError } from '../../src/errors/errors.js';
import type { FieldErrors } from '../../src/errors/errors.js';

/** Runs `fn`, expecting a ValidationError, and returns its field errors. */
export function errorsOf(fn: () => unknown): FieldErrors {
  try {
    fn();
  } catch (error) {
    if (error instanceof ValidationError) return error.errors;
    throw error;
  }
  throw new Error('expected a ValidationError, but nothing was thrown');
}
