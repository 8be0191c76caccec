import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { ExpressionEngine } from '../../src/expressions/engine.js';
import { isLuhnValid } from '../../src/expressions/aliases.js';
import { revealText } from '../../src/expressions/mask-filters.js';

const engine = new ExpressionEngine();
const render = (template: string, data: unknown, metadata: unknown = {}) => engine.render(template, { data, metadata }, 'expr');

/** Renders and returns the ValidationError's messages for the field, failing if it does not throw one. */
function failure(template: string, data: unknown): string {
  try {
    render(template, data);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    const messages = (error as ValidationError).errors.expr;
    expect(messages).toHaveLength(1);
    return messages?.[0] ?? '';
  }
  throw new Error(`expected ${template} to fail`);
}

describe('stringify / json_stringify', () => {
  it('writes the JSON text of any value', () => {
    expect(render('{{ data | stringify }}', { a: 1, b: [true, null, 'x'] })).toBe('{"a":1,"b":[true,null,"x"]}');
    expect(render('{{ data | json_stringify }}', 'abc')).toBe('"abc"');
    expect(render('{{ data | stringify }}', 42)).toBe('42');
  });
  it('writes null for a missing value', () => {
    expect(render('{{ data.nope | stringify }}', {})).toBe('null');
  });
});

describe('json', () => {
  const data = { card: { number: '4242', 'odd key': 'v' }, list: [10, { x: 'y' }] };
  it('selects one value by JSONPath', () => {
    expect(render("{{ data | json: '$.card.number' }}", data)).toBe('4242');
    expect(render(`{{ data | json: "$.card['odd key']" }}`, data)).toBe('v');
    expect(render("{{ data | json: '$.list[1].x' }}", data)).toBe('y');
    expect(render("{{ data | json: '$.list[1]' | stringify }}", data)).toBe('{"x":"y"}');
    expect(render("{{ data | json: '$' | stringify }}", 5)).toBe('5');
  });
  it('yields nil for a missing path, and never follows prototypes or array length', () => {
    expect(render("{{ data | json: '$.card.cvc' }}", data)).toBe('');
    expect(render("{{ data | json: '$.list[9]' | stringify }}", data)).toBe('null');
    expect(render("{{ data | json: '$.constructor' | stringify }}", data)).toBe('null');
    expect(render("{{ data | json: '$.list.length' | stringify }}", data)).toBe('null');
  });
  it('keeps liquid json behaviour without a path', () => {
    expect(render('{{ data | json }}', { a: 1 })).toBe('{"a":1}');
    expect(render('{{ data | json: 2 }}', { a: 1 })).toBe('{\n  "a": 1\n}');
  });
  it('refuses a path outside the subset', () => {
    expect(failure("{{ data | json: 'card.number' }}", data)).toMatch(/json: path must start with '\$'/);
    expect(failure("{{ data | json: '$..number' }}", data)).toMatch(/json: /);
    expect(failure("{{ data | json: '$.list[*]' }}", data)).toMatch(/unsupported path syntax/);
  });
});

describe('last4', () => {
  it('keeps the last 4 characters of the string form', () => {
    expect(render('{{ data | last4 }}', '4242424242421234')).toBe('1234');
    expect(render('{{ data | last4 }}', 123456)).toBe('3456');
    expect(render('{{ data | last4 }}', 'ab')).toBe('ab');
  });
  it('refuses an object', () => {
    expect(failure('{{ data | last4 }}', { a: 1 })).toBe('last4 expects text, a number or a boolean');
  });
});

describe('reveal_last', () => {
  it('masks all but the last n characters', () => {
    expect(render('{{ data | reveal_last: 4 }}', '4242424242424242')).toBe('XXXXXXXXXXXX4242');
    expect(render("{{ data | reveal_last: 2, '*' }}", 'abcdef')).toBe('****ef');
    expect(render('{{ data | reveal_last: 0 }}', 'abc')).toBe('XXX');
  });
  it('masks everything when it would reveal everything', () => {
    expect(render('{{ data | reveal_last: 4 }}', '1234')).toBe('XXXX');
    expect(render('{{ data | reveal_last: 10 }}', 'abc')).toBe('XXX');
  });
  it('refuses a bad count or mask character', () => {
    expect(failure('{{ data | reveal_last: -1 }}', 'abc')).toBe('reveal_last: count must be a non-negative integer');
    expect(failure('{{ data | reveal_last: 1.5 }}', 'abc')).toMatch(/count must be a non-negative integer/);
    expect(failure('{{ data | reveal_last }}', 'abc')).toMatch(/count must be a non-negative integer/);
    expect(failure("{{ data | reveal_last: 2, 'XY' }}", 'abc')).toBe('reveal_last: mask character must be a single character');
  });
});

describe('reveal', () => {
  it('shows the first and last characters', () => {
    expect(render('{{ data | reveal: 2, 3 }}', 'abcdefgh')).toBe('abXXXfgh');
    expect(render("{{ data | reveal: 1, 1, '#' }}", 'abcd')).toBe('a##d');
  });
  it('keeps keep_chars in place without counting them as revealed', () => {
    expect(render("{{ data | reveal: 0, 4, 'X', '-' }}", '123-45-6789')).toBe('XXX-XX-6789');
    expect(render("{{ data | reveal: 2, 2, '*', '- ' }}", '12 34-56')).toBe('12 **-56');
  });
  it('masks everything when it would reveal every maskable character', () => {
    expect(render('{{ data | reveal: 2, 2 }}', 'abcd')).toBe('XXXX');
    expect(render("{{ data | reveal: 2, 2, 'X', '-' }}", '12-34')).toBe('XX-XX');
    expect(render('{{ data | reveal: 3, 0 }}', 'ab')).toBe('XX');
  });
  it('counts characters, not UTF-16 units, with or without kept characters', () => {
    // Reference: the rule spelled out per code point.
    const reference = (text: string, first: number, last: number, mask: string, keep: string) => {
      const chars = Array.from(text);
      const maskable = chars.filter((c) => !keep.includes(c)).length;
      let i = 0;
      return chars
        .map((c) => {
          if (keep.includes(c)) return c;
          const index = i++;
          return first + last < maskable && (index < first || index >= maskable - last) ? c : mask;
        })
        .join('');
    };
    const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.stringMatching(/^[0-9]{12,19}$/));
    const keep = fc.constantFrom('', '-', ' -', '😀');
    const mask = fc.constantFrom('X', '*', '😀');
    fc.assert(
      fc.property(text, fc.nat(20), fc.nat(20), mask, keep, (t, first, last, m, k) => {
        expect(revealText(t, first, last, m, k)).toBe(reference(t, first, last, m, k));
      }),
    );
    expect(render('{{ data | reveal_last: 2 }}', 'a😀bc')).toBe('XXbc');
  });
  it('refuses bad arguments', () => {
    expect(failure("{{ data | reveal: 'a', 1 }}", 'abc')).toBe('reveal: first must be a non-negative integer');
    expect(failure("{{ data | reveal: 1, 1, 'X', 5 }}", 'abc')).toBe('reveal: keep_chars must be a string');
    expect(failure('{{ data | reveal: 1, 1 }}', [1, 2])).toBe('reveal expects text, a number or a boolean');
  });
});

describe('card_bin', () => {
  it('gives 6 digits under 16 digits and 8 from 16 digits', () => {
    expect(render('{{ data | card_bin }}', '4242424242424242')).toBe('42424242');
    expect(render('{{ data | card_bin }}', '378282246310005')).toBe('378282');
    expect(render('{{ data | card_bin }}', '36227206271667')).toBe('362272');
  });
  it('drops a given separator', () => {
    expect(render("{{ data | card_bin: '-' }}", '4242-4242-4242-4242')).toBe('42424242');
  });
  it('refuses what is not a card number', () => {
    expect(failure('{{ data | card_bin }}', 'abcd')).toBe('card_bin expects a card number of 12 to 19 digits');
    expect(failure('{{ data | card_bin }}', '4242-4242-4242-4242')).toMatch(/12 to 19 digits/);
    expect(failure('{{ data.missing | card_bin }}', {})).toMatch(/missing/);
  });
});

describe('card_exp', () => {
  const card = { number: '4242424242424242', expiration_month: 3, expiration_year: 2031 };
  it('formats the expiration with MM, M, YYYY and YY', () => {
    expect(render('{{ data | card_exp }}', card)).toBe('03/31');
    expect(render("{{ data | card_exp: 'MM/YYYY' }}", card)).toBe('03/2031');
    expect(render("{{ data | card_exp: 'M-YY' }}", card)).toBe('3-31');
    expect(render("{{ data | card_exp: 'YYYYMM' }}", { expiration_month: '11', expiration_year: '2030' })).toBe('203011');
  });
  it('refuses a string, or a card without a valid month or year', () => {
    expect(failure("{{ data | card_exp: 'MM/YY' }}", '4242424242424242')).toMatch(/card_exp expects a card object/);
    expect(failure('{{ data | card_exp }}', { expiration_month: 13, expiration_year: 2030 })).toMatch(/expiration_month/);
    expect(failure('{{ data | card_exp }}', { expiration_month: 1 })).toMatch(/expiration_year/);
    expect(failure('{{ data | card_exp: 5 }}', card)).toMatch(/format must be text/);
  });
});

describe('card_mask', () => {
  it('shows the first 6 and last 4 of a 15+ digit number', () => {
    expect(render('{{ data | card_mask }}', '4242424242424242')).toBe('424242XXXXXX4242');
    expect(render('{{ data | card_mask }}', '378282246310005')).toBe('378282XXXXX0005');
    expect(render('{{ data | card_mask }}', '4242 4242 4242 4242')).toBe('4242 42XX XXXX 4242');
  });
  it('shows only the last 4 of a shorter number', () => {
    expect(render('{{ data | card_mask }}', '36227206271667')).toBe('XXXXXXXXXX1667');
  });
  it('masks everything when the last 4 would be all of it', () => {
    expect(render('{{ data | card_mask }}', '1234')).toBe('XXXX');
  });
  it('refuses what is not a card number', () => {
    expect(failure('{{ data | card_mask }}', 'abc')).toMatch(/card_mask expects a card number/);
    expect(failure('{{ data | card_mask }}', { number: '4242' })).toMatch(/card_mask expects a card number/);
  });
});

describe('pad_left / pad_right', () => {
  it('pads to the width with the character', () => {
    expect(render("{{ data | pad_left: 6, '0' }}", '42')).toBe('000042');
    expect(render("{{ data | pad_right: 5, '*' }}", 'ab')).toBe('ab***');
    expect(render('{{ data | pad_left: 4 }}', 7)).toBe('   7');
    expect(render("{{ data | pad_left: 2, '0' }}", 'abcd')).toBe('abcd');
  });
  it('refuses a bad width or character', () => {
    expect(failure("{{ data | pad_left: -2, '0' }}", 'a')).toBe('pad_left: width must be a whole number from 0 to 1000 written in the expression');
    expect(failure("{{ data | pad_right: 100000000, '0' }}", 'a')).toMatch(/pad_right: width must be a whole number from 0 to 1000/);
    expect(failure("{{ data | pad_right: 4, '00' }}", 'a')).toBe('pad_right: pad character must be a single character');
  });
});

describe('to_number / to_string / to_boolean', () => {
  it('converts numeric text to a number', () => {
    expect(render('{{ data | to_number | plus: 1 }}', '41')).toBe('42');
    expect(render('{{ data | to_number }}', '-1.5e2')).toBe('-150');
    expect(engine.renderTree('{{ data | to_number }}', { data: '7' }, 'f')).toBe('7');
  });
  it('refuses text that is not a number', () => {
    expect(failure('{{ data | to_number }}', 'abc')).toBe('to_number expects a number or numeric text');
    expect(failure('{{ data | to_number }}', '')).toMatch(/to_number/);
    expect(failure('{{ data | to_number }}', true)).toMatch(/to_number/);
  });
  it('converts to text', () => {
    expect(render('{{ data | to_string | size }}', 12345)).toBe('5');
    expect(render('{{ data | to_string }}', { a: 1 })).toBe('{"a":1}');
    expect(render('{{ data | to_string }}', true)).toBe('true');
  });
  it('converts true/false text to a boolean', () => {
    expect(render('{% assign b = data | to_boolean %}{% if b %}yes{% else %}no{% endif %}', 'false')).toBe('no');
    expect(render('{% assign b = data | to_boolean %}{% if b %}yes{% else %}no{% endif %}', 'TRUE')).toBe('yes');
    expect(render('{{ data | to_boolean }}', false)).toBe('false');
  });
  it('refuses anything else as a boolean', () => {
    expect(failure('{{ data | to_boolean }}', 'yes')).toBe("to_boolean expects true, false, 'true' or 'false'");
    expect(failure('{{ data | to_boolean }}', 1)).toMatch(/to_boolean/);
  });
});

describe('alias_preserve_format', () => {
  it('keeps first/last characters, the class of every other letter or digit, and separators', () => {
    for (let i = 0; i < 20; i++) {
      const out = render('{{ data | alias_preserve_format: 2, 3 }}', 'AB12-cdEF-3456');
      expect(out).toMatch(/^AB\d\d-[a-z][a-z][A-Z][A-Z]-\d456$/);
    }
  });
  it('aliases everything when first + last would keep every character', () => {
    const outs = new Set<string>();
    for (let i = 0; i < 20; i++) outs.add(render('{{ data | alias_preserve_format: 3, 3 }}', '123456'));
    for (const out of outs) expect(out).toMatch(/^\d{6}$/);
    expect(outs.size).toBeGreaterThan(1);
  });
  it('refuses a missing value and bad counts', () => {
    expect(failure('{{ data.x | alias_preserve_format: 1, 1 }}', {})).toMatch(/alias_preserve_format expects a value/);
    expect(failure("{{ data | alias_preserve_format: 'a', 1 }}", 'abc')).toMatch(/first must be/);
  });
});

describe('alias_preserve_length', () => {
  it('keeps first/last characters and the length, replacing the rest by alphanumerics', () => {
    const out = render('{{ data | alias_preserve_length: 3, 5 }}', 'ABC-def@ghi.jk67890');
    expect(out).toHaveLength(19);
    expect(out).toMatch(/^ABC[A-Za-z0-9]{11}67890$/);
  });
  it('refuses an object', () => {
    expect(failure('{{ data | alias_preserve_length: 1, 1 }}', { a: 1 })).toMatch(/alias_preserve_length expects text/);
  });
});

describe('alias_card', () => {
  it('gives a different Luhn-valid number of the same length with the same first 6 and last 4', () => {
    for (const number of ['4242424242424242', '378282246310005', '6011111111111117', '424242424242']) {
      const out = render('{{ data | alias_card }}', number);
      expect(out).toHaveLength(number.length);
      expect(out.slice(0, 6)).toBe(number.slice(0, 6));
      expect(out.slice(-4)).toBe(number.slice(-4));
      expect(out).not.toBe(number);
      expect(isLuhnValid(out)).toBe(true);
    }
  });
  it('refuses what is not a card number', () => {
    expect(failure('{{ data | alias_card }}', '4242')).toBe('alias_card expects a card number of 12 to 19 digits');
    expect(failure('{{ data | alias_card }}', { number: '4242424242424242' })).toMatch(/alias_card expects a card number/);
  });
});

describe('hmac / to_base64 / to_base16', () => {
  const expected256 = createHmac('sha256', 'k3y').update('4242424242424242').digest();
  const expected512 = createHmac('sha512', 'k3y').update('4242424242424242').digest();
  it('computes the HMAC bytes, encoded by to_base64 or to_base16', () => {
    expect(render("{{ data | hmac: 'sha-256', 'k3y' | to_base64 }}", '4242424242424242')).toBe(expected256.toString('base64'));
    expect(render("{{ data | hmac: 'sha-256', 'k3y' | to_base16 }}", '4242424242424242')).toBe(expected256.toString('hex'));
    expect(render("{{ data | hmac: 'SHA-512', 'k3y' | to_base16 }}", '4242424242424242')).toBe(expected512.toString('hex'));
  });
  it('renders bare HMAC bytes as hex', () => {
    expect(render("{{ data | hmac: 'sha-256', 'k3y' }}", '4242424242424242')).toBe(expected256.toString('hex'));
  });
  it('encodes text as UTF-8 bytes', () => {
    expect(render('{{ data | to_base64 }}', 'héllo')).toBe(Buffer.from('héllo').toString('base64'));
    expect(render('{{ data | to_base16 }}', 'AB')).toBe('4142');
  });
  it('refuses other algorithms, a missing key and a missing value', () => {
    expect(failure("{{ data | hmac: 'md5', 'k' }}", 'x')).toBe("hmac: the algorithm must be 'sha-256' or 'sha-512'");
    expect(failure("{{ data | hmac: 'sha-1', 'k' }}", 'x')).toMatch(/algorithm/);
    expect(failure("{{ data | hmac: 'sha-256' }}", 'x')).toBe('hmac: the key must be non-empty text');
    expect(failure("{{ data.nope | hmac: 'sha-256', 'k' }}", {})).toMatch(/hmac expects a value/);
    expect(failure('{{ data | to_base64 }}', { a: 1 })).toMatch(/to_base64 expects text/);
  });
});

describe('standard liquid filters', () => {
  it('are available beside the vault filters', () => {
    expect(render("{{ data | remove: '-' }}", '123-45-6789')).toBe('123456789');
    expect(render('{{ data.name | upcase }}', { name: 'ada' })).toBe('ADA');
    expect(render("{{ data | split: ' ' | last }}", 'Ada Lovelace')).toBe('Lovelace');
  });
});
