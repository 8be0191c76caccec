/** Filters that read a card number or a card's expiry. */
import { ExpressionFilterError, type FilterThis, MAX_NUMBER_TEXT, charArg, charged, isNil } from './filter-values.js';
import { DEFAULT_MASK_CHAR, revealText } from './mask-filters.js';

export function digitsOf(filter: string, value: unknown, separators: string): string {
  if (isNil(value)) throw new ExpressionFilterError(`${filter} expects a card number, but it is missing`);
  if (typeof value !== 'string' && !(typeof value === 'number' && Number.isSafeInteger(value) && value >= 0)) {
    throw new ExpressionFilterError(`${filter} expects a card number`);
  }
  const given = String(value);
  if (given.length > MAX_NUMBER_TEXT) throw new ExpressionFilterError(`${filter} expects a card number of 12 to 19 digits`);
  // A set, so a long separator argument costs its length once rather than once per character of the number.
  const skip = new Set(separators);
  const text =
    skip.size === 0
      ? given
      : Array.from(given)
          .filter((c) => !skip.has(c))
          .join('');
  if (!/^\d{12,19}$/.test(text)) throw new ExpressionFilterError(`${filter} expects a card number of 12 to 19 digits`);
  return text;
}

export function cardBin(this: FilterThis, value: unknown, separator?: unknown): string {
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
export function cardMask(this: FilterThis, value: unknown, char?: unknown): string {
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

export function cardExp(this: FilterThis, value: unknown, format?: unknown): string {
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
  return charged(
    this,
    pattern.replace(/YYYY|YY|MM|M/g, (token) => parts[token] as string),
  );
}
