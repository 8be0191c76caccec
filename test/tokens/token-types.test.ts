import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { TOKEN_TYPES, getTokenType, isAbaRoutingValid, isLuhnValid } from '../../src/tokens/token-types.js';
import { errorsOf } from '../support/field-errors.js';

const card = getTokenType('card');
const bank = getTokenType('bank');

describe('TOKEN_TYPES', () => {
  it('has every type of docs/tokens.md with its defaults', () => {
    const table = [...TOKEN_TYPES.values()].map((t) => [t.name, t.defaultContainer, t.defaultFingerprintExpression, t.hasCvc]);
    expect(table).toEqual([
      ['token', '/general/high/', '{{ data | stringify }}', false],
      ['card', '/pci/high/', '{{ data.number }}', true],
      ['bank', '/bank/high/', '{{ data.account_number }}|{{ data.routing_number }}', false],
      ['card_number', '/pci/high/', '{{ data }}', false],
      ['us_bank_routing_number', '/bank/low/', '{{ data }}', false],
      ['us_bank_account_number', '/bank/high/', '{{ data }}', false],
      ['social_security_number', '/pii/high/', "{{ data | remove: '-' }}", false],
      ['employer_id_number', '/pii/high/', "{{ data | remove: '-' }}", false],
    ]);
  });

  it('has the default masks', () => {
    expect(getTokenType('token').defaultMask).toBeNull();
    expect(card.defaultMask).toEqual({
      number: '{{ data.number | reveal_last: 4 }}',
      expiration_month: '{{ data.expiration_month }}',
      expiration_year: '{{ data.expiration_year }}',
    });
    expect(bank.defaultMask).toEqual({
      routing_number: '{{ data.routing_number }}',
      account_number: '{{ data.account_number | reveal_last: 4 }}',
    });
    for (const name of ['card_number', 'us_bank_routing_number', 'us_bank_account_number']) {
      expect(getTokenType(name).defaultMask).toBe('{{ data | reveal_last: 4 }}');
    }
    for (const name of ['social_security_number', 'employer_id_number']) {
      expect(getTokenType(name).defaultMask).toBe("{{ data | reveal: 0, 4, 'X', '-' }}");
    }
  });

  it('definitions and masks are frozen', () => {
    expect(Object.isFrozen(card)).toBe(true);
    expect(Object.isFrozen(card.defaultMask)).toBe(true);
  });
});

describe('getTokenType', () => {
  it('rejects an unknown type on the field type, listing the known ones', () => {
    const errors = errorsOf(() => getTokenType('cheque'));
    expect(errors['type']?.[0]).toContain("unknown token type 'cheque'");
    expect(errors['type']?.[0]).toContain('card, bank');
  });
  it('is case-sensitive', () => {
    expect(() => getTokenType('Card')).toThrow(ValidationError);
  });
  it('does not echo a type name that looks like data', () => {
    const errors = errorsOf(() => getTokenType('4242424242424242'));
    expect(JSON.stringify(errors)).not.toContain('4242');
  });
});

describe('checksums', () => {
  it('Luhn', () => {
    expect(isLuhnValid('4242424242424242')).toBe(true);
    expect(isLuhnValid('4242424242424241')).toBe(false);
    expect(isLuhnValid('378282246310005')).toBe(true);
  });
  it('ABA', () => {
    expect(isAbaRoutingValid('021000021')).toBe(true);
    expect(isAbaRoutingValid('011000015')).toBe(true);
    expect(isAbaRoutingValid('021000022')).toBe(false);
    expect(isAbaRoutingValid('12345678')).toBe(false);
    expect(isAbaRoutingValid('02100002a')).toBe(false);
  });
});

describe('token', () => {
  const token = getTokenType('token');
  it('accepts any JSON and returns it unchanged', () => {
    for (const data of [{ a: [1, { b: true }] }, [1, 2], 'text', 42, 1.5, false, true, '', 0, [], {}]) {
      expect(token.validate(data)).toBe(data);
    }
  });
  it('rejects null and undefined as missing data', () => {
    expect(errorsOf(() => token.validate(null))).toEqual({ data: ['is required'] });
    expect(errorsOf(() => token.validate(undefined))).toEqual({ data: ['is required'] });
  });
  it('rejects values that are not JSON, naming where', () => {
    expect(Object.keys(errorsOf(() => token.validate({ a: { b: Number.NaN } })))).toEqual(['data.a.b']);
    expect(Object.keys(errorsOf(() => token.validate([1, () => 1])))).toEqual(['data[1]']);
    expect(Object.keys(errorsOf(() => token.validate({ d: new Date(0) })))).toEqual(['data.d']);
    expect(Object.keys(errorsOf(() => token.validate({ u: undefined })))).toEqual(['data.u']);
    expect(Object.keys(errorsOf(() => token.validate(Number.POSITIVE_INFINITY)))).toEqual(['data']);
    expect(Object.keys(errorsOf(() => token.validate(10n)))).toEqual(['data']);
  });
  it('rejects nesting beyond 64 levels (and so cycles) without a stack overflow', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 70; i++) deep = [deep];
    expect(errorsOf(() => token.validate(deep))['data' + '[0]'.repeat(64)]).toBeDefined();
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(() => token.validate(cyclic)).toThrow(ValidationError);
  });
});

describe('card', () => {
  const valid = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };
  it('accepts a full card and returns the same object', () => {
    expect(card.validate(valid)).toBe(valid);
    expect(card.validate({ number: '4242424242424242' })).toEqual({ number: '4242424242424242' });
    expect(card.validate({ ...valid, cvc: '1234' })).toEqual({ ...valid, cvc: '1234' });
    expect(card.validate({ ...valid, expiration_month: 1 })).toEqual({ ...valid, expiration_month: 1 });
  });
  it('accepts 13 to 19 digit Luhn-valid numbers', () => {
    for (const number of ['4000000000006', '378282246310005', '4000000000000000006']) {
      expect(card.validate({ number })).toEqual({ number });
    }
  });
  it('rejects numbers with separators, wrong length, failing Luhn, or not a string', () => {
    for (const number of ['4242 4242 4242 4242', '4242-4242-4242-4242', '400000000002', '40000000000000000002', '', 'abcdabcdabcdabcd', 4242424242424242]) {
      expect(errorsOf(() => card.validate({ number }))).toEqual({ 'data.number': ['must be a string of 13 to 19 digits without spaces or separators'] });
    }
    expect(errorsOf(() => card.validate({ number: '4242424242424241' }))).toEqual({ 'data.number': ['is not a valid card number (Luhn check failed)'] });
  });
  it('requires number', () => {
    expect(errorsOf(() => card.validate({ cvc: '123' }))).toEqual({ 'data.number': ['is required'] });
  });
  it('rejects bad months: 13, 0, a string, a non-integer, null', () => {
    for (const expiration_month of [13, 0, '12', 1.5, null, -1]) {
      expect(errorsOf(() => card.validate({ ...valid, expiration_month }))).toEqual({ 'data.expiration_month': ['must be an integer month from 1 to 12'] });
    }
  });
  it('rejects years that are not four-digit integers (25, 20301, "2030", 2030.5)', () => {
    for (const expiration_year of [25, 999, 20301, '2030', 2030.5]) {
      expect(errorsOf(() => card.validate({ ...valid, expiration_year }))).toEqual({ 'data.expiration_year': ['must be a four-digit integer year'] });
    }
  });
  it('rejects cvcs of 2 or 5 digits, letters, or numbers', () => {
    for (const cvc of ['12', '12345', '12a', 123, '']) {
      expect(errorsOf(() => card.validate({ ...valid, cvc }))).toEqual({ 'data.cvc': ['must be a string of 3 or 4 digits'] });
    }
  });
  it('reports every bad field of one card in one error', () => {
    const errors = errorsOf(() => card.validate({ number: '4242424242424241', expiration_month: 13, expiration_year: 25, cvc: '12' }));
    expect(Object.keys(errors).sort()).toEqual(['data.cvc', 'data.expiration_month', 'data.expiration_year', 'data.number']);
  });
  it('rejects unknown keys, naming identifier-like ones only', () => {
    expect(errorsOf(() => card.validate({ ...valid, name: 'x', zip: '1' }))).toEqual({
      'data.name': ['is not allowed; allowed keys: number, expiration_month, expiration_year, cvc'],
      'data.zip': ['is not allowed; allowed keys: number, expiration_month, expiration_year, cvc'],
    });
    const errors = errorsOf(() => card.validate({ ...valid, '4111111111111111': true }));
    expect(Object.keys(errors)).toEqual(['data']);
    expect(JSON.stringify(errors)).not.toContain('4111');
  });
  it('rejects data that is not an object', () => {
    for (const data of ['4242424242424242', 42, null, undefined, ['4242424242424242']]) {
      expect(Object.keys(errorsOf(() => card.validate(data)))).toEqual(['data']);
    }
  });
  it('never echoes the data in messages', () => {
    const error = (() => {
      try {
        card.validate({ number: '4242 4242 4242 4242', cvc: '98765' });
      } catch (e) {
        return e as ValidationError;
      }
      throw new Error('expected an error');
    })();
    expect(error.message + JSON.stringify(error.errors)).not.toMatch(/4242|98765/);
  });
});

describe('bank', () => {
  const valid = { routing_number: '021000021', account_number: '12345678901234567' };
  it('accepts valid routing numbers and 1-17 digit accounts', () => {
    expect(bank.validate(valid)).toBe(valid);
    expect(bank.validate({ routing_number: '011000015', account_number: '1' })).toEqual({ routing_number: '011000015', account_number: '1' });
  });
  it('rejects an 18-digit account number, non-digits, empty, a number', () => {
    for (const account_number of ['123456789012345678', '1234-5678', '', 12345678]) {
      expect(errorsOf(() => bank.validate({ ...valid, account_number }))).toEqual({ 'data.account_number': ['must be a string of 1 to 17 digits'] });
    }
  });
  it('rejects a routing number failing the ABA checksum', () => {
    expect(errorsOf(() => bank.validate({ ...valid, routing_number: '021000022' }))).toEqual({ 'data.routing_number': ['is not a valid routing number (ABA checksum failed)'] });
  });
  it('rejects routing numbers that are not 9 digits', () => {
    for (const routing_number of ['02100002', '0210000210', '02100002a', 21000021]) {
      expect(errorsOf(() => bank.validate({ ...valid, routing_number }))).toEqual({ 'data.routing_number': ['must be a string of exactly 9 digits'] });
    }
  });
  it('requires both fields and reports both at once', () => {
    expect(errorsOf(() => bank.validate({}))).toEqual({ 'data.routing_number': ['is required'], 'data.account_number': ['is required'] });
  });
  it('rejects unknown keys', () => {
    expect(Object.keys(errorsOf(() => bank.validate({ ...valid, account_type: 'checking' })))).toEqual(['data.account_type']);
  });
});

describe('primitive types', () => {
  const cases: [string, unknown[], unknown[]][] = [
    ['card_number', ['4242424242424242', '4000000000006'], ['4242424242424241', '4242 4242 4242 4242', 4242424242424242, '400000000002', { number: '4242424242424242' }]],
    ['us_bank_routing_number', ['021000021', '011000015'], ['021000022', '02100002', 21000021, '']],
    ['us_bank_account_number', ['123', '12345678901234567'], ['12', '123456789012345678', '12a45', 12345]],
    ['social_security_number', ['123456789', '123-45-6789'], ['12345678', '1234567890', '123-456-789', '12-345-6789', '123 45 6789', '123-45-678', 123456789]],
    ['employer_id_number', ['123456789', '12-3456789'], ['12345678', '123-456789', '1-23456789', '12-345678', 123456789]],
  ];
  for (const [name, good, bad] of cases) {
    it(`${name} accepts valid values`, () => {
      for (const data of good) expect(getTokenType(name).validate(data)).toBe(data);
    });
    it(`${name} rejects invalid values on the field data`, () => {
      for (const data of bad) {
        const errors = errorsOf(() => getTokenType(name).validate(data));
        expect(Object.keys(errors)).toEqual(['data']);
      }
    });
  }
});
