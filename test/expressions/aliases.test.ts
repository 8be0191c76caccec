import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aliasCard, aliasPreserveFormat, aliasPreserveLength, isLuhnValid } from '../../src/expressions/aliases.js';

describe('isLuhnValid', () => {
  it('accepts valid numbers and refuses others', () => {
    for (const n of ['4242424242424242', '378282246310005', '6011111111111117', '0']) expect(isLuhnValid(n), n).toBe(true);
    for (const n of ['4242424242424241', '', '4242-4242', 'abc']) expect(isLuhnValid(n), n).toBe(false);
  });
});

describe('aliasCard', () => {
  it('always gives a different Luhn-valid number keeping length, first 6 and last 4', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^\d{12,19}$/), (digits) => {
        const out = aliasCard(digits);
        expect(out).toHaveLength(digits.length);
        expect(out.slice(0, 6)).toBe(digits.slice(0, 6));
        expect(out.slice(-4)).toBe(digits.slice(-4));
        expect(out).not.toBe(digits);
        expect(isLuhnValid(out)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
  it('still differs for a 12-digit number, whose middle has only 10 Luhn-valid choices', () => {
    for (let i = 0; i < 200; i++) expect(aliasCard('424242000042')).not.toBe('424242000042');
  });
  it('refuses numbers it cannot alias', () => {
    for (const bad of ['42424242424', '42424242424242424242', '4242x42424242424', '']) {
      expect(() => aliasCard(bad), bad).toThrow(RangeError);
    }
  });
});

describe('aliasPreserveFormat', () => {
  it('keeps length, separators and character classes', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40, unit: 'binary' }), fc.nat(5), fc.nat(5), (text, first, last) => {
        const out = Array.from(aliasPreserveFormat(text, first, last));
        const chars = Array.from(text);
        expect(out).toHaveLength(chars.length);
        chars.forEach((c, i) => {
          const o = out[i] as string;
          const kept = o === c;
          if (/\p{Nd}/u.test(c)) expect(kept || /^\d$/.test(o)).toBe(true);
          else if (/\p{Lu}/u.test(c)) expect(kept || /^[A-Z]$/.test(o)).toBe(true);
          else if (/\p{L}/u.test(c)) expect(kept || /^[a-z]$/.test(o)).toBe(true);
          else expect(o).toBe(c);
        });
      }),
    );
  });
  it('keeps the first and last letters or digits, counted without separators', () => {
    const out = aliasPreserveFormat('12-34-56-78', 3, 2);
    expect(out).toMatch(/^12-3\d-\d\d-78$/);
  });
  it('replaces non-ASCII letters too', () => {
    const outs = new Set(Array.from({ length: 10 }, () => aliasPreserveFormat('ÉÉÉÉÉÉ', 0, 0)));
    for (const out of outs) expect(out).toMatch(/^[A-Z]{6}$/);
  });
});

describe('aliasPreserveLength', () => {
  it('keeps length and the first/last characters', () => {
    expect(aliasPreserveLength('ab-cd-ef', 2, 2)).toMatch(/^ab[A-Za-z0-9]{4}ef$/);
    expect(aliasPreserveLength('', 1, 1)).toBe('');
  });
  it('replaces everything when first + last cover the whole text', () => {
    const outs = new Set(Array.from({ length: 10 }, () => aliasPreserveLength('abcdef', 3, 3)));
    expect(outs.size).toBeGreaterThan(1);
    for (const out of outs) expect(out).toMatch(/^[A-Za-z0-9]{6}$/);
  });
});
