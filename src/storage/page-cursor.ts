import { ValidationError } from '../errors/errors.js';

// The cursor and page-size rules of every list in both stores (store-paging.ts): one spelling, so
// a cursor one store issues is read the same way by the other's code and by the shared areas.

const CURSOR_PATTERN = /^[1-9][0-9]{0,15}$/;

/** The opaque cursor after the row with this seq: base64url of its decimal digits. */
export function encodeCursor(seq: number): string {
  return Buffer.from(String(seq), 'utf8').toString('base64url');
}

/** The seq a cursor stands for; ValidationError on `start` for anything a store did not issue. */
export function decodeCursor(start: string): number {
  const digits = typeof start === 'string' ? Buffer.from(start, 'base64url').toString('utf8') : '';
  // Re-encoding must give the same text: rejects padding, stray characters and other spellings.
  if (!CURSOR_PATTERN.test(digits) || !Number.isSafeInteger(Number(digits)) || encodeCursor(Number(digits)) !== start) {
    throw ValidationError.field('start', 'is not a valid cursor');
  }
  return Number(digits);
}

/** A page size or number: a whole number of at least 1, else ValidationError on `field`. */
export function checkPositive(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw ValidationError.field(field, 'must be a whole number of at least 1');
  return value;
}
