/** Filters that stand in for a value: HMACs (and their encodings) and aliases. */
import { createHmac } from 'node:crypto';
import { ExpressionFilterError, type FilterThis, HmacDigest, charged, countArg, requiredText, textOf } from './filter-values.js';

/** Longest text the alias filters replace (one random draw per character). */
export const MAX_ALIAS_LENGTH = 4_096;
const HMAC_ALGORITHMS: Readonly<Record<string, string>> = { 'sha-256': 'sha256', 'sha-512': 'sha512' };

export function hmac(this: FilterThis, value: unknown, algorithm?: unknown, key?: unknown): HmacDigest {
  const name = typeof algorithm === 'string' ? HMAC_ALGORITHMS[algorithm.toLowerCase()] : undefined;
  if (name === undefined) throw new ExpressionFilterError("hmac: the algorithm must be 'sha-256' or 'sha-512'");
  if (typeof key !== 'string' || key.length === 0) throw new ExpressionFilterError('hmac: the key must be non-empty text');
  const input = charged(this, value instanceof HmacDigest ? value.bytes : Buffer.from(requiredText('hmac', value), 'utf8'));
  return new HmacDigest(createHmac(name, key).update(input).digest());
}

export function bytesOf(self: FilterThis, filter: string, value: unknown): Buffer {
  return charged(self, value instanceof HmacDigest ? value.bytes : Buffer.from(textOf(filter, value), 'utf8'));
}

export function aliasArgs(self: FilterThis, filter: string, value: unknown, first: unknown, last: unknown): [string, number, number] {
  const text = charged(self, requiredText(filter, value));
  if (text.length > MAX_ALIAS_LENGTH) throw new ExpressionFilterError(`${filter}: the value must be at most ${MAX_ALIAS_LENGTH} characters`);
  return [text, countArg(filter, 'first', first, 0), countArg(filter, 'last', last, 0)];
}
