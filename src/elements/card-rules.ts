/*
 * Card input rules the browser frames apply as the user types (docs/elements.md): brand detection,
 * Luhn, formatting and expiry validation. Pure functions, shared by the frame bundle and tests; the
 * vault validates again when it stores the token (ARCHITECTURE.md, Token types: card numbers are Luhn-checked there).
 */

import { isLuhnValid } from '../tokens/luhn.js';

export type CardBrand =
  'visa' | 'mastercard' | 'american-express' | 'discover' | 'diners-club' | 'jcb' | 'unionpay' | 'maestro' | 'elo' | 'hiper' | 'hipercard' | 'mir' | 'unknown';

interface BrandRule {
  brand: CardBrand;
  /** Matches the leading digits (enough of them to tell the brand). */
  prefix: { test(digits: string): boolean };
  lengths: readonly number[];
  /** Group sizes for display. */
  gaps: readonly number[];
  cvcLength: number;
}

/** Leading digits within one of the ranges (`[low, high]` of equal length, or one prefix). */
function ranges(...list: (number | [number, number])[]): { test(digits: string): boolean } {
  return {
    test: (digits) =>
      list.some((range) => {
        const [low, high] = typeof range === 'number' ? [range, range] : range;
        const length = String(low).length;
        if (digits.length < length) return false;
        const lead = Number(digits.slice(0, length));
        return lead >= low && lead <= high;
      }),
  };
}

// Most specific first: a number is the first brand whose prefix matches. Elo, Hiper, Hipercard and
// Mir are ranges inside others' (Visa's, Maestro's, Discover's, Mastercard's), so they come first.
const BRANDS: readonly BrandRule[] = [
  { brand: 'hipercard', prefix: ranges(606282), lengths: [16], gaps: [4, 4, 4, 4], cvcLength: 3 },
  { brand: 'hiper', prefix: ranges(637095, 63737423, 63743358, 637568, 637599, 637609, 637612), lengths: [16], gaps: [4, 4, 4, 4], cvcLength: 3 },
  {
    brand: 'elo',
    prefix: ranges(
      401178,
      401179,
      438935,
      457631,
      457632,
      431274,
      451416,
      457393,
      504175,
      [506699, 506778],
      [509000, 509999],
      627780,
      636297,
      636368,
      [650031, 650033],
      [650035, 650051],
      [650405, 650439],
      [650485, 650538],
      [650541, 650598],
      [650700, 650718],
      [650720, 650727],
      [650901, 650978],
      [651652, 651679],
      [655000, 655019],
      [655021, 655058],
    ),
    lengths: [16],
    gaps: [4, 4, 4, 4],
    cvcLength: 3,
  },
  { brand: 'mir', prefix: ranges([2200, 2204]), lengths: [16, 17, 18, 19], gaps: [4, 4, 4, 4, 3], cvcLength: 3 },
  { brand: 'american-express', prefix: /^3[47]/, lengths: [15], gaps: [4, 6, 5], cvcLength: 4 },
  { brand: 'diners-club', prefix: /^3(0[0-5]|[689])/, lengths: [14, 16, 19], gaps: [4, 6, 4], cvcLength: 3 },
  { brand: 'jcb', prefix: /^35(2[89]|[3-8])/, lengths: [16, 17, 18, 19], gaps: [4, 4, 4, 4, 3], cvcLength: 3 },
  { brand: 'discover', prefix: /^(6011|64[4-9]|65)/, lengths: [16, 19], gaps: [4, 4, 4, 4, 3], cvcLength: 3 },
  { brand: 'unionpay', prefix: /^62/, lengths: [16, 17, 18, 19], gaps: [4, 4, 4, 4, 3], cvcLength: 3 },
  { brand: 'mastercard', prefix: /^(5[1-5]|2(2[2-9]|[3-6]|7[01]|720))/, lengths: [16], gaps: [4, 4, 4, 4], cvcLength: 3 },
  { brand: 'maestro', prefix: /^(5[06-9]|6)/, lengths: [12, 13, 14, 15, 16, 17, 18, 19], gaps: [4, 4, 4, 4, 3], cvcLength: 3 },
  { brand: 'visa', prefix: /^4/, lengths: [13, 16, 19], gaps: [4, 4, 4, 4, 3], cvcLength: 3 },
];

const UNKNOWN: BrandRule = { brand: 'unknown', prefix: /^/, lengths: [13, 14, 15, 16, 17, 18, 19], gaps: [4, 4, 4, 4, 3], cvcLength: 3 };

/** Digits only. */
export function digitsOf(value: string): string {
  return value.replace(/\D/g, '');
}

function ruleFor(digits: string): BrandRule {
  return BRANDS.find((rule) => rule.prefix.test(digits)) ?? UNKNOWN;
}

/** The card brand its leading digits name ('unknown' until they do). */
export function cardBrand(number: string): CardBrand {
  const digits = digitsOf(number);
  return digits.length === 0 ? 'unknown' : ruleFor(digits).brand;
}

/** The Luhn (mod 10) checksum of a string of digits (the vault's own check). */
export function luhnValid(digits: string): boolean {
  return /^\d+$/.test(digits) && isLuhnValid(digits);
}

/** The most digits a number of this brand may have. */
export function maxCardDigits(number: string): number {
  const rule = ruleFor(digitsOf(number));
  return rule.lengths[rule.lengths.length - 1]!;
}

/** Digits grouped for display (`4242 4242 4242 4242`, `3782 822463 10005`), cut at the brand's longest length. */
export function formatCardNumber(number: string): string {
  const digits = digitsOf(number);
  const rule = ruleFor(digits);
  const cut = digits.slice(0, rule.lengths[rule.lengths.length - 1]);
  const groups: string[] = [];
  let at = 0;
  for (const gap of rule.gaps) {
    if (at >= cut.length) break;
    groups.push(cut.slice(at, at + gap));
    at += gap;
  }
  if (at < cut.length) groups.push(cut.slice(at));
  return groups.join(' ');
}

/** What a field's state is: what a `change` event carries (never the value). */
export interface FieldState {
  empty: boolean;
  complete: boolean;
  valid: boolean;
  /** Error codes (`incomplete`, `invalid_luhn`, `expired`, ...), empty when valid. */
  errors: string[];
  cardBrand?: CardBrand;
}

/** The state of a card number as typed. */
export function cardNumberState(number: string): FieldState {
  const digits = digitsOf(number);
  const rule = ruleFor(digits);
  const brand = digits.length === 0 ? 'unknown' : rule.brand;
  if (digits.length === 0) return { empty: true, complete: false, valid: false, errors: ['required'], cardBrand: brand };
  const longEnough = rule.lengths.includes(digits.length);
  const errors: string[] = [];
  if (!longEnough) errors.push('incomplete');
  else if (!luhnValid(digits)) errors.push('invalid_luhn');
  return { empty: false, complete: errors.length === 0, valid: errors.length === 0, errors, cardBrand: brand };
}

/** An expiration date as typed (`MM / YY`, `MM/YYYY`): its month and four-digit year, or null. */
export function parseExpiration(value: string): { month: number; year: number } | null {
  const match = /^\s*(\d{1,2})\s*\/?\s*(\d{2}|\d{4})\s*$/.exec(value.replace(/\s+/g, ' '));
  if (!match) return null;
  const month = Number(match[1]);
  const year = match[2]!.length === 2 ? 2000 + Number(match[2]) : Number(match[2]);
  return month >= 1 && month <= 12 ? { month, year } : null;
}

/** Typed expiry digits shown as `MM / YY`. */
export function formatExpiration(value: string): string {
  let digits = digitsOf(value).slice(0, 6);
  // A first digit above 1 can only be a single-digit month.
  if (digits.length >= 1 && Number(digits[0]) > 1) digits = `0${digits}`.slice(0, 6);
  if (digits.length <= 2) return digits;
  return `${digits.slice(0, 2)} / ${digits.slice(2, digits.length === 6 ? 6 : 4)}`;
}

/**
 * The state of an expiration date: valid when it is a month from `now`'s month on (a card expires
 * at the end of its month) and at most 20 years ahead.
 */
export function expirationState(value: string, now: { month: number; year: number }): FieldState {
  if (digitsOf(value).length === 0) return { empty: true, complete: false, valid: false, errors: ['required'] };
  const parsed = parseExpiration(value);
  if (parsed === null) return { empty: false, complete: false, valid: false, errors: ['incomplete'] };
  const months = parsed.year * 12 + parsed.month - (now.year * 12 + now.month);
  const errors = months < 0 ? ['expired'] : months > 20 * 12 ? ['too_far_ahead'] : [];
  return { empty: false, complete: errors.length === 0, valid: errors.length === 0, errors };
}

/** The state of a card verification code: 3 or 4 digits (4 for American Express). */
export function cvcState(value: string, brand: CardBrand = 'unknown'): FieldState {
  const digits = digitsOf(value);
  if (digits.length === 0) return { empty: true, complete: false, valid: false, errors: ['required'] };
  const expected = brand === 'unknown' ? [3, 4] : [BRANDS.find((b) => b.brand === brand)?.cvcLength ?? 3];
  const ok = digits.length === value.trim().length && expected.includes(digits.length);
  const errors = ok ? [] : [digits.length < Math.min(...expected) ? 'incomplete' : 'invalid'];
  return { empty: false, complete: ok, valid: ok, errors };
}
