import { describe, expect, it } from 'vitest';
import { validateArgs } from '../../src/reactors/args.js';
import type { DeclaredType } from '../../src/storage/store.js';
import { errorsOf } from '../support/field-errors.js';

const p = (name: string, type: DeclaredType, optional = false) => ({ name, type, optional, description: null });

describe('validateArgs', () => {
  it('accepts any args when nothing is declared (rule 2)', () => {
    expect(validateArgs({ anything: ['goes'], n: '1' }, [])).toEqual({ anything: ['goes'], n: '1' });
    expect(validateArgs(undefined, [])).toEqual({});
    expect(validateArgs(null, [])).toEqual({});
  });

  it('refuses args that are not an object', () => {
    expect(errorsOf(() => validateArgs([1], []))).toHaveProperty(['args']);
    expect(errorsOf(() => validateArgs('x', [p('a', 'string')]))).toHaveProperty(['args']);
  });

  it('matches names exactly and case-sensitively (rule 3)', () => {
    expect(errorsOf(() => validateArgs({ Amount: 5 }, [p('amount', 'number')]))).toEqual({ 'args.amount': ['is required'] });
    expect(validateArgs({ amount: 5 }, [p('amount', 'number')])).toEqual({ amount: 5 });
  });

  it('follows dot paths into nested objects (rule 3)', () => {
    const params = [p('card.number', 'string'), p('card.expiration_month', 'number')];
    expect(validateArgs({ card: { number: '4242', expiration_month: '12' } }, params)).toEqual({ card: { number: '4242', expiration_month: 12 } });
    expect(errorsOf(() => validateArgs({ card: { number: '4242' } }, params))).toEqual({ 'args.card.expiration_month': ['is required'] });
    expect(errorsOf(() => validateArgs({ card: 'flat' }, params))).toHaveProperty(['args.card.number']);
    // A literal dotted key is not the nested path.
    expect(errorsOf(() => validateArgs({ 'card.number': '4242', card: {} }, [p('card.number', 'string')]))).toHaveProperty(['args.card.number']);
  });

  it('requires non-optional parameters, lets optional ones be omitted, and names every missing one (rule 4)', () => {
    const params = [p('a', 'string'), p('b', 'number'), p('c', 'boolean', true)];
    expect(errorsOf(() => validateArgs({}, params))).toEqual({ 'args.a': ['is required'], 'args.b': ['is required'] });
    expect(errorsOf(() => validateArgs({ a: null, b: 1 }, params))).toEqual({ 'args.a': ['is required'] });
    expect(validateArgs({ a: 'x', b: 1 }, params)).toEqual({ a: 'x', b: 1 });
    expect(validateArgs({ a: 'x', b: 1, c: null }, params)).toEqual({ a: 'x', b: 1, c: null });
  });

  it('casts to the declared type first (rule 5)', () => {
    const params = [p('n', 'number'), p('f', 'number'), p('yes', 'boolean'), p('no', 'boolean'), p('s', 'string'), p('o', 'object'), p('l', 'array')];
    expect(validateArgs({ n: '42', f: ' -1.5e2 ', yes: 'true', no: 'false', s: 7, o: '{"a":1}', l: '[1,2]' }, params)).toEqual({
      n: 42,
      f: -150,
      yes: true,
      no: false,
      s: '7',
      o: { a: 1 },
      l: [1, 2],
    });
  });

  it('refuses impossible casts without echoing the value (rule 5)', () => {
    const cases: [DeclaredType, unknown][] = [
      ['number', 'abc'],
      ['number', ''],
      ['number', true],
      ['number', '1e999'],
      ['boolean', 'yes'],
      ['boolean', 1],
      ['string', { a: 1 }],
      ['object', [1]],
      ['object', 'not json'],
      ['array', { a: 1 }],
      ['array', '{"a":1}'],
    ];
    for (const [type, value] of cases) {
      const errors = errorsOf(() => validateArgs({ x: value }, [p('x', type)]));
      expect(errors['args.x']?.[0]).toMatch(new RegExp(`^must be an? ${type}`));
      if (typeof value === 'string' && value.length > 0) expect(errors['args.x']?.[0]).not.toContain(value);
    }
  });

  it('casts a parent from JSON before reading its children', () => {
    const params = [p('card.number', 'string'), p('card', 'object')];
    expect(validateArgs({ card: '{"number":"4242"}' }, params)).toEqual({ card: { number: '4242' } });
  });

  it('passes undeclared args through unvalidated (rule 10, decided)', () => {
    expect(validateArgs({ a: '1', extra: { deep: 'kept' } }, [p('a', 'number')])).toEqual({ a: 1, extra: { deep: 'kept' } });
  });
});
