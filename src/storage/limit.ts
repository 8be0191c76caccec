import { ValidationError } from '../errors/errors.js';

/**
 * The `limit` of a store's batch operation (sweeps, re-encryption): a whole number of at least 1.
 * SQLite would treat a negative LIMIT as "no limit", so none gets through to any store.
 */
export function checkLimit(limit: number): number {
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) throw ValidationError.field('limit', 'must be a whole number of at least 1');
  return limit;
}
