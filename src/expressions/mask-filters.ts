/** Filters that hide part of a text (reveal*, last4) or pad it. */
import { ExpressionFilterError, type FilterThis, charArg, charged, countArg, isNil, textOf } from './filter-values.js';

export const DEFAULT_MASK_CHAR = 'X';
/** pad_left/pad_right refuse widths above this, so a template cannot allocate without bound. */
export const MAX_PAD_WIDTH = 1_000;

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

export function reveal(this: FilterThis, value: unknown, first?: unknown, last?: unknown, char?: unknown, keep?: unknown): string {
  const f = countArg('reveal', 'first', first);
  const l = countArg('reveal', 'last', last, 0);
  const c = charArg('reveal', 'mask character', char, DEFAULT_MASK_CHAR);
  if (!isNil(keep) && typeof keep !== 'string') throw new ExpressionFilterError('reveal: keep_chars must be a string');
  return charged(this, revealText(textOf('reveal', value), f, l, c, keep ?? ''));
}

export function revealLast(this: FilterThis, value: unknown, count?: unknown, char?: unknown): string {
  const n = countArg('reveal_last', 'count', count);
  const c = charArg('reveal_last', 'mask character', char, DEFAULT_MASK_CHAR);
  return charged(this, revealText(textOf('reveal_last', value), 0, n, c));
}

export function last4(this: FilterThis, value: unknown): string {
  return Array.from(charged(this, textOf('last4', value)))
    .slice(-4)
    .join('');
}

export function pad(self: FilterThis, filter: string, value: unknown, width: unknown, char: unknown, end: boolean): string {
  const n = countArg(filter, 'width', width);
  if (n > MAX_PAD_WIDTH) throw new ExpressionFilterError(`${filter}: width must be at most ${MAX_PAD_WIDTH}`);
  const c = charArg(filter, 'pad character', char, ' ');
  const text = charged(self, textOf(filter, value));
  const missing = n - Array.from(text).length;
  if (missing <= 0) return text;
  return charged(self, end ? text + c.repeat(missing) : c.repeat(missing) + text);
}
