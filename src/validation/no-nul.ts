import { ValidationError } from '../errors/errors.js';

/** The message of a string holding U+0000. */
export const NUL_MESSAGE = 'must not contain NUL characters (\\u0000)';
/** The message of a string holding half of a surrogate pair alone (not Unicode text). */
export const LONE_SURROGATE_MESSAGE = 'must be Unicode text: it holds half of a surrogate pair alone (\\ud800 to \\udfff)';

/** String.prototype.isWellFormed (Node 20; ES2024, beyond this project's TypeScript lib): false when a surrogate is unpaired. */
const isWellFormed = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed();

/**
 * Refuses a NUL character (U+0000) or a lone surrogate in any string of `value` (object keys
 * included), naming the field: `metadata.k`, `search_indexes[0]`. PostgreSQL text cannot hold NUL
 * and SQLite can; PostgreSQL turns a lone surrogate into U+FFFD (two different strings become one)
 * and SQLite keeps it. So the services refuse both in everything stored as text, the same on both
 * stores. Token data is stored encrypted (JSON escapes both): pass `skip` (top-level keys not
 * looked into, e.g. `data`).
 * @example refuseNul({ metadata: { k: 'a\u0000' } }, '', ['data']) // ValidationError on metadata.k
 */
export function refuseNul(value: unknown, field: string, skip: readonly string[] = []): void {
  const found = find(value, field, skip, 0);
  if (found !== null) throw ValidationError.field(found.path === '' ? 'body' : found.path, found.nul ? NUL_MESSAGE : LONE_SURROGATE_MESSAGE);
}

/** Deeper than this, the input's own validation refuses the value anyway. */
const MAX_DEPTH = 64;

interface Found {
  path: string;
  nul: boolean;
}

function check(text: string, path: string): Found | null {
  // Native checks: this runs on every string of every request.
  if (text.includes('\u0000')) return { path, nul: true };
  return isWellFormed(text) ? null : { path, nul: false };
}

function find(value: unknown, field: string, skip: readonly string[], depth: number): Found | null {
  if (typeof value === 'string') return check(value, field);
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = find(value[i], `${field}[${i}]`, [], depth + 1);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    if (depth === 0 && skip.includes(key)) continue;
    const inKey = check(key, field);
    if (inKey !== null) return inKey;
    const found = find(item, field === '' ? key : `${field}.${key}`, [], depth + 1);
    if (found !== null) return found;
  }
  return null;
}
