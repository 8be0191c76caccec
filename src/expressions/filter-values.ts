/**
 * What the vault filters share: their view of liquid, their error, and how they read values and arguments.
 *
 * Every filter that gets a wrong input throws an ExpressionFilterError whose message names the filter
 * and the problem but never the value, so the engine can pass the message on to the caller as is.
 *
 * Text filters (last4, reveal*, pad_*) treat a missing value as empty text, like liquid's own string
 * filters. Filters whose output identifies data (card_*, alias_*, hmac) refuse a missing value: a
 * constant alias or HMAC for every token whose field is absent would collide silently.
 */

/** A filter was given an input or argument it cannot work with. The message carries no data. */
export class ExpressionFilterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExpressionFilterError';
  }
}

/** The slice of liquid's filter `this` the vault filters use. */
export interface FilterThis {
  context: { memoryLimit: { use(count: number): void } };
}

/** A vault filter as registered on liquid. */
export type VaultFilter = (this: FilterThis, value: unknown, ...args: unknown[]) => unknown;

/**
 * Raw HMAC bytes, the output of `hmac`, meant to be followed by `to_base64` or `to_base16`.
 * Rendered as is (or stringified) it shows as lower-case hex rather than as mangled binary text.
 */
export class HmacDigest {
  readonly bytes: Buffer;
  constructor(bytes: Buffer) {
    this.bytes = bytes;
  }
  toString(): string {
    return this.bytes.toString('hex');
  }
  toJSON(): string {
    return this.toString();
  }
}

/** Longest text card_mask and to_number look at: a card number or a number is far shorter. */
export const MAX_NUMBER_TEXT = 256;

export function isNil(value: unknown): value is null | undefined {
  return value === null || value === undefined;
}

/** The string form of a scalar; missing → ''. Objects and arrays are refused. */
export function textOf(filter: string, value: unknown): string {
  if (typeof value === 'string') return value;
  if (isNil(value)) return '';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value instanceof HmacDigest) return value.toString();
  throw new ExpressionFilterError(`${filter} expects text, a number or a boolean`);
}

export function requiredText(filter: string, value: unknown): string {
  if (isNil(value)) throw new ExpressionFilterError(`${filter} expects a value, but it is missing`);
  return textOf(filter, value);
}

export function countArg(filter: string, name: string, arg: unknown, fallback?: number): number {
  if (arg === undefined && fallback !== undefined) return fallback;
  const n = typeof arg === 'string' && /^\s*\d+\s*$/.test(arg) ? Number(arg) : arg;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw new ExpressionFilterError(`${filter}: ${name} must be a non-negative integer`);
  }
  return n;
}

export function charArg(filter: string, name: string, arg: unknown, fallback: string): string {
  if (isNil(arg)) return fallback;
  if (typeof arg !== 'string' || Array.from(arg).length !== 1) {
    throw new ExpressionFilterError(`${filter}: ${name} must be a single character`);
  }
  return arg;
}

/**
 * Charges the render's memory limit for text a filter builds, as liquid's own filters do: without it
 * `stringify | stringify | …` (each doubles the backslashes) grew exponentially within one output.
 */
export function charged<T extends { length: number }>(self: FilterThis, out: T): T {
  self.context.memoryLimit.use(out.length);
  return out;
}
