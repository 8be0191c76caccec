/** The checks of a token's input that need more than valibot gives: plain JSON values, and metadata keyed per entry. */
import { ValidationError } from '../errors/errors.js';
import type { FieldErrors } from '../errors/errors.js';
import { addError, printableKey } from '../validation/field-errors.js';
import { TOKEN_INPUT_LIMITS as L } from './token-input-schemas.js';

/**
 * Validates a complete metadata map: string keys of 1-128 characters, string values of at most
 * 1024, at most 100 keys. Returns a fresh object. The service also calls it on the result of an
 * update's merge patch, since only then is the key count known.
 */
export function parseMetadata(value: unknown, field = 'metadata'): Record<string, string> {
  return checkMetadata(value, field, false) as Record<string, string>;
}

/** Like parseMetadata, but values may be null (merge patch: delete that key). */
export function parseMetadataPatch(value: unknown, field = 'metadata'): Record<string, string | null> {
  return checkMetadata(value, field, true);
}

function checkMetadata(value: unknown, field: string, allowNull: boolean): Record<string, string | null> {
  if (!isPlainObject(value)) throw ValidationError.field(field, 'must be an object whose values are strings');
  const entries = Object.entries(value);
  const errors: FieldErrors = {};
  if (entries.length > L.metadataKeys) addError(errors, field, `must have at most ${L.metadataKeys} keys`);
  for (const [key, item] of entries) {
    const path = `${field}.${key}`;
    if (key.length === 0 || key.length > L.metadataKeyLength) {
      addError(errors, field, `keys must be 1 to ${L.metadataKeyLength} characters`);
    } else if (item === null && allowNull) {
      continue;
    } else if (typeof item !== 'string') {
      addError(errors, path, 'must be a string (metadata values are strings only)');
    } else if (item.length > L.metadataValueLength) {
      addError(errors, path, `must be at most ${L.metadataValueLength} characters`);
    }
  }
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  return Object.fromEntries(entries) as Record<string, string | null>;
}

/**
 * Checks that a value is plain JSON (null, boolean, finite number, string, array, plain object),
 * at most TOKEN_INPUT_LIMITS.jsonDepth deep. Problems are keyed by path; the first ten are kept.
 */
export function jsonProblems(value: unknown, path: string): FieldErrors {
  const errors: FieldErrors = {};
  let count = 0;
  const visit = (node: unknown, at: string, depth: number): void => {
    if (count >= 10) return;
    if (node === null || typeof node === 'string' || typeof node === 'boolean') return;
    if (typeof node === 'number') {
      if (!Number.isFinite(node)) report(at, 'must be a finite number');
      return;
    }
    if (Array.isArray(node) || isPlainObject(node)) {
      if (depth >= L.jsonDepth) return report(at, `nests deeper than ${L.jsonDepth} levels`);
      if (Array.isArray(node)) node.forEach((item, i) => visit(item, `${at}[${i}]`, depth + 1));
      else {
        for (const [key, item] of Object.entries(node)) {
          // Data keys may themselves be sensitive: an unprintable key reports at its parent.
          const name = printableKey(key);
          visit(item, name === null ? at : `${at}.${name}`, depth + 1);
        }
      }
      return;
    }
    report(at, 'must be a JSON value (null, boolean, number, string, array or object)');
  };
  const report = (at: string, message: string): void => {
    count++;
    addError(errors, at, message);
  };
  visit(value, path, 0);
  return errors;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
