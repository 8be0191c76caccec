import { ValidationError } from '../errors.js';

/** The message of a string holding U+0000. */
export const NUL_MESSAGE = 'must not contain NUL characters (\\u0000)';

/**
 * Refuses a NUL character (U+0000) in any string of `value` (object keys included), naming the
 * field: `metadata.k`, `search_indexes[0]`. PostgreSQL text cannot hold NUL and SQLite can, so the
 * services refuse it in everything stored as text, the same on both stores. Token data is stored
 * encrypted and may hold NUL: pass `skip` (top-level keys not looked into, e.g. `data`).
 * @example refuseNul({ metadata: { k: 'a\u0000' } }, '', ['data']) // ValidationError on metadata.k
 */
export function refuseNul(value: unknown, field: string, skip: readonly string[] = []): void {
  const path = find(value, field, skip, 0);
  if (path !== null) throw ValidationError.field(path === '' ? 'body' : path, NUL_MESSAGE);
}

/** Deeper than this, the input's own validation refuses the value anyway. */
const MAX_DEPTH = 64;

function find(value: unknown, field: string, skip: readonly string[], depth: number): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? field : null;
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
    if (key.includes('\u0000')) return field;
    const found = find(item, field === '' ? key : `${field}.${key}`, [], depth + 1);
    if (found !== null) return found;
  }
  return null;
}
