/**
 * Random aliases for the `alias_*` filters. Randomness comes from node:crypto `randomInt`, so an alias
 * cannot be predicted from earlier ones.
 */
import { randomInt } from 'node:crypto';

const DIGITS = '0123456789';
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const ALPHANUMERIC = DIGITS + UPPER + LOWER;

function pick(alphabet: string): string {
  return alphabet[randomInt(alphabet.length)] as string;
}

/**
 * Indexes (into `chars`) of the replaceable characters to keep: the first `first` and last `last` of
 * them. When that would keep every replaceable character, nothing is kept, because an alias that
 * equals its input would reveal it ("a reveal that would show everything masks everything").
 */
function keptPositions(replaceable: readonly number[], first: number, last: number): Set<number> {
  if (first + last >= replaceable.length) return new Set();
  return new Set([...replaceable.slice(0, first), ...replaceable.slice(replaceable.length - last)]);
}

/**
 * Replaces every letter and digit except the first `first` and last `last` of them by a random
 * character of the same class (digit → digit, upper case → upper case, any other letter → lower
 * case); other characters (separators, spaces) are kept.
 * @example aliasPreserveFormat('4242-4242-4242-4242', 0, 4) // e.g. '9170-3382-0571-4242'
 */
export function aliasPreserveFormat(text: string, first: number, last: number): string {
  const chars = Array.from(text);
  const replaceable: number[] = [];
  chars.forEach((c, i) => {
    if (/[\p{L}\p{Nd}]/u.test(c)) replaceable.push(i);
  });
  const kept = keptPositions(replaceable, first, last);
  return chars
    .map((c, i) => {
      if (kept.has(i)) return c;
      if (/\p{Nd}/u.test(c)) return pick(DIGITS);
      if (/\p{Lu}/u.test(c)) return pick(UPPER);
      if (/\p{L}/u.test(c)) return pick(LOWER);
      return c;
    })
    .join('');
}

/**
 * Replaces every character except the first `first` and last `last` by a random alphanumeric, keeping
 * the length.
 * @example aliasPreserveLength('john@example.com', 2, 0) // e.g. 'joX81kq0ZtbA3mPe'
 */
export function aliasPreserveLength(text: string, first: number, last: number): string {
  const chars = Array.from(text);
  const kept = keptPositions(
    chars.map((_, i) => i),
    first,
    last,
  );
  return chars.map((c, i) => (kept.has(i) ? c : pick(ALPHANUMERIC))).join('');
}

/** True when the digit string passes the Luhn (mod 10) check. */
export function isLuhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    sum += luhnWeight(Number(digits[digits.length - 1 - i]), i % 2 === 1);
  }
  return sum % 10 === 0;
}

function luhnWeight(digit: number, doubled: boolean): number {
  if (!doubled) return digit;
  const d = digit * 2;
  return d > 9 ? d - 9 : d;
}

const MAX_ATTEMPTS = 100;

/**
 * A random Luhn-valid card number of the same length that keeps the first 6 and last 4 digits and
 * is never equal to the input. `digits` must be 12 to 19 digits.
 *
 * All middle digits but one are random; the last middle digit is then the single value that makes
 * the Luhn sum work (doubling is a permutation of 0-9, so exactly one digit fits either way).
 */
export function aliasCard(digits: string): string {
  if (!/^\d{12,19}$/.test(digits)) throw new RangeError('alias_card expects a card number of 12 to 19 digits');
  const head = digits.slice(0, 6);
  const tail = digits.slice(-4);
  const middleLength = digits.length - 10;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    let middle = '';
    for (let i = 0; i < middleLength - 1; i++) middle += pick(DIGITS);
    const candidate = completeLuhn(head + middle, tail);
    if (candidate !== digits) return candidate;
  }
  // With at least 2 middle digits the chance of landing here is at most 10^-100.
  throw new RangeError('alias_card could not produce a different card number');
}

/** Finds the digit d such that prefix + d + suffix is Luhn-valid. */
function completeLuhn(prefix: string, suffix: string): string {
  for (let d = 0; d <= 9; d++) {
    const candidate = `${prefix}${d}${suffix}`;
    if (isLuhnValid(candidate)) return candidate;
  }
  throw new RangeError('unreachable: no Luhn digit fits');
}
