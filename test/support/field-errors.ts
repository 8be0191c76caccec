import { ValidationError } from '../../src/errors/errors.js';
import type { FieldErrors } from '../../src/errors/errors.js';

/** Runs `fn`, expecting it to throw a ValidationError, and returns that error. */
export function validationErrorOf(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error('expected a ValidationError, but nothing was thrown');
}

/** Runs `fn`, expecting a ValidationError, and returns its field errors. */
export function errorsOf(fn: () => unknown): FieldErrors {
  return validationErrorOf(fn).errors;
}
