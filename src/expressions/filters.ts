/**
 * The vault filters (DESIGN.md 5), registered on the liquid instance beside the standard ones.
 *
 * Every filter that gets a wrong input throws an ExpressionFilterError whose message names the filter
 * and the problem but never the value, so the engine can pass the message on to the caller as is.
 *
 * Text filters (last4, reveal*, pad_*) treat a missing value as empty text, like liquid's own string
 * filters. Filters whose output identifies data (card_*, alias_*, hmac) refuse a missing value: a
 * constant alias or HMAC for every token whose field is absent would collide silently.
 */
import { createHmac } from 'node:crypto';
import { aliasCard, aliasPreserveFormat, aliasPreserveLength } from './aliases.js';
import { JsonPathSyntaxError, parseJsonPath, selectJsonPath } from './json-path.js';

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

const DEFAULT_MASK_CHAR = 'X';
/** pad_left/pad_right refuse widths above this, so a template cannot allocate without bound. */
export const MAX_PAD_WIDTH = 1_000;
/** Longest text the alias filters replace (one random draw per character). */
export const MAX_ALIAS_LENGTH = 4_096;
/** Longest text card_mask and to_number look at: a card number or a number is far shorter. */
const MAX_NUMBER_TEXT = 256;
const HMAC_ALGORITHMS: Readonly<Record<string, string>> = { 'sha-256': 'sha256', 'sha-512': 'sha512' };

function isNil(value: unknown): value is null | undefined {
  return value === null || value === undefined;
}

/** The string form of a scalar; missing → ''. Objects and arrays are refused. */
function textOf(filter: string, value: unknown): string {
  if (typeof value === 'string') return value;
  if (isNil(value)) return '';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value instanceof HmacDigest) return value.toString();
  throw new ExpressionFilterError(`${filter} expects text, a number or a boolean`);
}

function requiredText(filter: string, value: unknown): string {
  if (isNil(value)) throw new ExpressionFilterError(`${filter} expects a value, but it is missing`);
  return textOf(filter, value);
}

function countArg(filter: string, name: string, arg: unknown, fallback?: number): number {
  if (arg === undefined && fallback !== undefined) return fallback;
  const n = typeof arg === 'string' && /^\s*\d+\s*$/.test(arg) ? Number(arg) : arg;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw new ExpressionFilterError(`${filter}: ${name} must be a non-negative integer`);
  }
  return n;
}

function charArg(filter: string, name: string, arg: unknown, fallback: string): string {
  if (isNil(arg)) return fallback;
  if (typeof arg !== 'string' || Array.from(arg).length !== 1) {
    throw new ExpressionFilterError(`${filter}: ${name} must be a single character`);
  }
  return arg;
}

const SURROGATE = /[\uD800-\uDFFF]/;

/**
 * Shows the first `first` and last `last` maskable characters and replaces the other maskable ones by
 * `maskChar`; characters in `keep` are left in place and are not counted. When the characters shown
 * would be every maskable character, all of them are masked instead: a mask never shows everything.
 */
export function revealText(text: string, first: number, last: number, maskChar: string, keep = ''): string {
  // Every mask of a card number reads this: without kept characters or surrogate pairs, each UTF-16
  // unit is one character and slicing gives the same result without an array per character.
  if (keep === '' && !SURROGATE.test(text)) {
    const n = text.length;
    if (first + last >= n) return maskChar.repeat(n);
    return text.slice(0, first) + maskChar.repeat(n - first - last) + text.slice(n - last);
  }
  const chars = Array.from(text);
  const keepSet = new Set(Array.from(keep));
  const maskable = chars.reduce((n, c) => (keepSet.has(c) ? n : n + 1), 0);
  const showAll = first + last >= maskable;
  let index = 0;
  return chars
    .map((c) => {
      if (keepSet.has(c)) return c;
      const i = index++;
      const shown = !showAll && (i < first || i >= maskable - last);
      return shown ? c : maskChar;
    })
    .join('');
}

function digitsOf(filter: string, value: unknown, separators: string): string {
  if (isNil(value)) throw new ExpressionFilterError(`${filter} expects a card number, but it is missing`);
  if (typeof value !== 'string' && !(typeof value === 'number' && Number.isSafeInteger(value) && value >= 0)) {
    throw new ExpressionFilterError(`${filter} expects a card number`);
  }
  const given = String(value);
  if (given.length > MAX_NUMBER_TEXT) throw new ExpressionFilterError(`${filter} expects a card number of 12 to 19 digits`);
  // A set, so a long separator argument costs its length once rather than once per character of the number.
  const skip = new Set(separators);
  const text = skip.size === 0 ? given : Array.from(given).filter((c) => !skip.has(c)).join('');
  if (!/^\d{12,19}$/.test(text)) throw new ExpressionFilterError(`${filter} expects a card number of 12 to 19 digits`);
  return text;
}

/**
 * Charges the render's memory limit for text a filter builds, as liquid's own filters do: without it
 * `stringify | stringify | …` (each doubles the backslashes) grew exponentially within one output.
 */
function charged<T extends { length: number }>(self: FilterThis, out: T): T {
  self.context.memoryLimit.use(out.length);
  return out;
}

function stringify(self: FilterThis, filter: string, value: unknown, space?: number): string {
  // Text is charged before too: escaping is the slow part (about 16 ns per character), and a chain
  // of stringify filters then stops before writing the largest string rather than after.
  if (typeof value === 'string') self.context.memoryLimit.use(value.length);
  let text: string;
  try {
    text = JSON.stringify(value === undefined ? null : value, null, space) ?? 'null';
  } catch {
    throw new ExpressionFilterError(`${filter}: the value cannot be written as JSON`);
  }
  return charged(self, text);
}

function jsonFilter(this: FilterThis, value: unknown, arg?: unknown): unknown {
  // Liquid's own `json` takes an indent; keep that form working and add the JSONPath form.
  if (arg === undefined) return stringify(this, 'json', value);
  if (typeof arg === 'number') return stringify(this, 'json', value, countArg('json', 'indent', arg));
  if (typeof arg !== 'string') throw new ExpressionFilterError("json: the argument must be a JSONPath such as '$.a.b'");
  try {
    return selectJsonPath(value, parseJsonPath(arg));
  } catch (error) {
    if (error instanceof JsonPathSyntaxError) throw new ExpressionFilterError(`json: ${error.message}`);
    throw error;
  }
}

function reveal(this: FilterThis, value: unknown, first?: unknown, last?: unknown, char?: unknown, keep?: unknown): string {
  const f = countArg('reveal', 'first', first);
  const l = countArg('reveal', 'last', last, 0);
  const c = charArg('reveal', 'mask character', char, DEFAULT_MASK_CHAR);
  if (!isNil(keep) && typeof keep !== 'string') throw new ExpressionFilterError('reveal: keep_chars must be a string');
  return charged(this, revealText(textOf('reveal', value), f, l, c, keep ?? ''));
}

function revealLast(this: FilterThis, value: unknown, count?: unknown, char?: unknown): string {
  const n = countArg('reveal_last', 'count', count);
  const c = charArg('reveal_last', 'mask character', char, DEFAULT_MASK_CHAR);
  return charged(this, revealText(textOf('reveal_last', value), 0, n, c));
}

function last4(this: FilterThis, value: unknown): string {
  return Array.from(charged(this, textOf('last4', value))).slice(-4).join('');
}

function cardBin(this: FilterThis, value: unknown, separator?: unknown): string {
  if (!isNil(separator) && typeof separator !== 'string') throw new ExpressionFilterError('card_bin: separator must be text');
  const digits = digitsOf('card_bin', value, separator ?? '');
  // Issuers moved to 8-digit BINs for 16+ digit numbers; shorter numbers keep 6 (as Basis Theory documents).
  return digits.slice(0, digits.length >= 16 ? 8 : 6);
}

/**
 * PCI display rule: at most the first 6 and last 4 digits. 15+ digit numbers show both; shorter ones
 * (13-14 digit cards) only the last 4, so at least half the digits stay hidden. Spaces and dashes
 * are kept in place.
 */
function cardMask(this: FilterThis, value: unknown, char?: unknown): string {
  const c = charArg('card_mask', 'mask character', char, DEFAULT_MASK_CHAR);
  if (isNil(value)) throw new ExpressionFilterError('card_mask expects a card number, but it is missing');
  const text = typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? String(value) : value;
  // Length first, then two linear tests: the single pattern /^[\d -]*\d[\d -]*$/ backtracked in
  // quadratic time (20,000 digits and a letter took 0.3 s; 1 MB of them, minutes).
  if (typeof text !== 'string' || text.length > MAX_NUMBER_TEXT || !/^[\d -]+$/.test(text) || !/\d/.test(text)) {
    throw new ExpressionFilterError('card_mask expects a card number (digits, spaces and dashes)');
  }
  const digits = text.replace(/[ -]/g, '').length;
  return revealText(text, digits >= 15 ? 6 : 0, 4, c, ' -');
}

function monthOf(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d{1,2}$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 12 ? n : undefined;
}

function yearOf(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d{4}$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1000 && n <= 9999 ? n : undefined;
}

function cardExp(this: FilterThis, value: unknown, format?: unknown): string {
  const pattern = isNil(format) ? 'MM/YY' : format;
  if (typeof pattern !== 'string') throw new ExpressionFilterError('card_exp: format must be text such as MM/YY');
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ExpressionFilterError('card_exp expects a card object with expiration_month and expiration_year');
  }
  const card = value as Record<string, unknown>;
  const month = monthOf(Object.hasOwn(card, 'expiration_month') ? card.expiration_month : undefined);
  const year = yearOf(Object.hasOwn(card, 'expiration_year') ? card.expiration_year : undefined);
  if (month === undefined) throw new ExpressionFilterError('card_exp: expiration_month must be a month from 1 to 12');
  if (year === undefined) throw new ExpressionFilterError('card_exp: expiration_year must be a four-digit year');
  const parts: Readonly<Record<string, string>> = {
    YYYY: String(year),
    YY: String(year % 100).padStart(2, '0'),
    MM: String(month).padStart(2, '0'),
    M: String(month),
  };
  return charged(this, pattern.replace(/YYYY|YY|MM|M/g, (token) => parts[token] as string));
}

function pad(self: FilterThis, filter: string, value: unknown, width: unknown, char: unknown, end: boolean): string {
  const n = countArg(filter, 'width', width);
  if (n > MAX_PAD_WIDTH) throw new ExpressionFilterError(`${filter}: width must be at most ${MAX_PAD_WIDTH}`);
  const c = charArg(filter, 'pad character', char, ' ');
  const text = charged(self, textOf(filter, value));
  const missing = n - Array.from(text).length;
  if (missing <= 0) return text;
  return charged(self, end ? text + c.repeat(missing) : c.repeat(missing) + text);
}

// `\d+(?:\.\d*)?` rather than `\d+\.?\d*`, which could split a run of digits every way (quadratic).
const NUMERIC = /^\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*$/;

function toNumber(this: FilterThis, value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.length <= MAX_NUMBER_TEXT && NUMERIC.test(value)) {
    const n = Number(value);
    if (Number.isFinite(n)) return n;
  }
  throw new ExpressionFilterError('to_number expects a number or numeric text');
}

function toStringFilter(this: FilterThis, value: unknown): string {
  if (value !== null && typeof value === 'object' && !(value instanceof HmacDigest)) return stringify(this, 'to_string', value);
  return charged(this, textOf('to_string', value));
}

function toBoolean(this: FilterThis, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    const text = value.trim().toLowerCase();
    if (text === 'true') return true;
    if (text === 'false') return false;
  }
  throw new ExpressionFilterError("to_boolean expects true, false, 'true' or 'false'");
}

function hmac(this: FilterThis, value: unknown, algorithm?: unknown, key?: unknown): HmacDigest {
  const name = typeof algorithm === 'string' ? HMAC_ALGORITHMS[algorithm.toLowerCase()] : undefined;
  if (name === undefined) throw new ExpressionFilterError("hmac: the algorithm must be 'sha-256' or 'sha-512'");
  if (typeof key !== 'string' || key.length === 0) throw new ExpressionFilterError('hmac: the key must be non-empty text');
  const input = charged(this, value instanceof HmacDigest ? value.bytes : Buffer.from(requiredText('hmac', value), 'utf8'));
  return new HmacDigest(createHmac(name, key).update(input).digest());
}

function bytesOf(self: FilterThis, filter: string, value: unknown): Buffer {
  return charged(self, value instanceof HmacDigest ? value.bytes : Buffer.from(textOf(filter, value), 'utf8'));
}

function aliasArgs(self: FilterThis, filter: string, value: unknown, first: unknown, last: unknown): [string, number, number] {
  const text = charged(self, requiredText(filter, value));
  if (text.length > MAX_ALIAS_LENGTH) throw new ExpressionFilterError(`${filter}: the value must be at most ${MAX_ALIAS_LENGTH} characters`);
  return [text, countArg(filter, 'first', first, 0), countArg(filter, 'last', last, 0)];
}

/** The vault filters by name. */
export const vaultFilters: Readonly<Record<string, VaultFilter>> = Object.freeze({
  stringify(this: FilterThis, value: unknown) {
    return stringify(this, 'stringify', value);
  },
  json_stringify(this: FilterThis, value: unknown) {
    return stringify(this, 'json_stringify', value);
  },
  json: jsonFilter,
  last4,
  reveal_last: revealLast,
  reveal,
  card_bin: cardBin,
  card_exp: cardExp,
  card_mask: cardMask,
  pad_left(this: FilterThis, value: unknown, width?: unknown, char?: unknown) {
    return pad(this, 'pad_left', value, width, char, false);
  },
  pad_right(this: FilterThis, value: unknown, width?: unknown, char?: unknown) {
    return pad(this, 'pad_right', value, width, char, true);
  },
  to_number: toNumber,
  to_string: toStringFilter,
  to_boolean: toBoolean,
  alias_preserve_format(this: FilterThis, value: unknown, first?: unknown, last?: unknown) {
    return aliasPreserveFormat(...aliasArgs(this, 'alias_preserve_format', value, first, last));
  },
  alias_preserve_length(this: FilterThis, value: unknown, first?: unknown, last?: unknown) {
    return aliasPreserveLength(...aliasArgs(this, 'alias_preserve_length', value, first, last));
  },
  alias_card(value: unknown) {
    return aliasCard(digitsOf('alias_card', value, ''));
  },
  hmac,
  to_base64(this: FilterThis, value: unknown) {
    return charged(this, bytesOf(this, 'to_base64', value).toString('base64'));
  },
  to_base16(this: FilterThis, value: unknown) {
    return charged(this, bytesOf(this, 'to_base16', value).toString('hex'));
  },
} satisfies Record<string, VaultFilter>);
