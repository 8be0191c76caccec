import type { PgTypeParsers } from './postgres-options.js';

// Result parsers for the store's own queries, passed with each query (pg's `types` option) rather
// than installed with pg.types.setTypeParser: that registry is process-wide, and changing how int8
// or json parse would change every other pg user in the process (and theirs would change ours).

const BOOL = 16;
const BYTEA = 17;
const INT8 = 20;
const INT2 = 21;
const INT4 = 23;
const JSON_OID = 114;
const JSONB = 3802;

/** int8: epoch milliseconds, seq values and counts. Exact up to 2^53; beyond, failing beats rounding. */
function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError('a bigint column holds a value beyond Number.MAX_SAFE_INTEGER');
  return value;
}

/** bytea in either output format: `hex` (the default since PostgreSQL 9.0) or `escape`. */
export function parseBytea(text: string): Buffer {
  if (text.startsWith('\\x')) return Buffer.from(text.slice(2), 'hex');
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x5c) {
      bytes.push(c);
    } else if (text[i + 1] === '\\') {
      bytes.push(0x5c);
      i++;
    } else {
      bytes.push(parseInt(text.slice(i + 1, i + 4), 8));
      i += 3;
    }
  }
  return Buffer.from(bytes);
}

const identity = (text: string): string => text;

const PARSERS = new Map<number, (text: string) => unknown>([
  [BOOL, (text) => text === 't'],
  [BYTEA, parseBytea],
  [INT8, parseInt8],
  [INT2, (text) => Number(text)],
  [INT4, (text) => Number(text)],
  [JSON_OID, (text) => JSON.parse(text)],
  [JSONB, (text) => JSON.parse(text)],
]);

/** Column parsers for every store query; any other type comes back as its text. */
export const TYPE_PARSERS: PgTypeParsers = Object.freeze({
  getTypeParser: (oid: number) => PARSERS.get(oid) ?? identity,
});
