import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { ExpressionEngine } from '../../src/expressions/engine.js';
import { applyDetokenize, MAX_DETOKENIZED_TOKENS, planDetokenize } from '../../src/tokens/detokenize.js';
import { errorsOf } from '../support/field-errors.js';

const engine = new ExpressionEngine();
const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const data = new Map<string, unknown>([
  ['card-1', card],
  ['ssn-1', '123-45-6789'],
  ['num-1', 42],
  ['list-1', [1, 2]],
]);

function detokenize(args: unknown): unknown {
  return applyDetokenize(planDetokenize(args), data, engine);
}

describe('planDetokenize', () => {
  it('finds distinct ids at any depth, each with the first field naming it', () => {
    const plan = planDetokenize({ a: '{{ card-1 }}', b: [{ c: 'x {{ssn-1}} y {{ card-1 | last4 }}' }], d: 5 });
    expect([...plan.ids]).toEqual([
      ['card-1', 'args.a'],
      ['ssn-1', 'args.b[0].c'],
    ]);
  });

  it('accepts exactly 100 distinct tokens and refuses 101 (the 100-token limit of docs/reactors.md)', () => {
    const args = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `{{ t${i} }}`]));
    expect(planDetokenize(args(MAX_DETOKENIZED_TOKENS)).ids.size).toBe(100);
    // Repeats of one id count once.
    expect(planDetokenize({ ...args(100), again: '{{ t0 }} {{ t1 }}' }).ids.size).toBe(100);
    expect(errorsOf(() => planDetokenize(args(101))).args?.[0]).toMatch(/101 distinct tokens; at most 100/);
  });

  it('refuses malformed expressions naming the field', () => {
    expect(errorsOf(() => planDetokenize({ a: { b: 'x {{ card-1' } }))).toHaveProperty(['args.a.b']);
    expect(errorsOf(() => planDetokenize({ a: '{{ }}' }))).toHaveProperty(['args.a']);
    expect(errorsOf(() => planDetokenize({ a: '{{ card-1 | }}' }))).toHaveProperty(['args.a']);
  });

  it('refuses non-JSON values and excessive depth', () => {
    expect(errorsOf(() => planDetokenize({ f: () => 1 }))).toHaveProperty(['args.f']);
    expect(errorsOf(() => planDetokenize({ n: Number.NaN }))).toHaveProperty(['args.n']);
    let deep: unknown = 'x';
    for (let i = 0; i < 70; i++) deep = [deep];
    expect(() => planDetokenize({ deep })).toThrow(ValidationError);
  });
});

describe('applyDetokenize', () => {
  it('replaces a whole-string expression with the data and its JSON type (rules 6, 7)', () => {
    expect(detokenize({ card: '{{ card-1 }}', n: '{{num-1}}', l: '{{ list-1 }}', s: '{{ ssn-1 }}' })).toEqual({
      card,
      n: 42,
      l: [1, 2],
      s: '123-45-6789',
    });
  });

  it('stringifies expressions mixed with text', () => {
    expect(detokenize({ text: 'ssn={{ ssn-1 }}; n={{ num-1 }}; card={{ card-1 }}' })).toEqual({
      text: `ssn=123-45-6789; n=42; card=${JSON.stringify(card)}`,
    });
  });

  it('applies vault filters through the expression engine', () => {
    expect(detokenize({ last4: '{{ card-1 | json: "$.number" | last4 }}', masked: 'ends {{ ssn-1 | last4 }}' })).toEqual({
      last4: '4242',
      masked: 'ends 6789',
    });
    // `}}` inside a quoted filter argument does not end the expression.
    expect(detokenize({ x: "{{ ssn-1 | append: '}}' }}" })).toEqual({ x: '123-45-6789}}' });
  });

  it('reports an unknown filter as a validation error on the field', () => {
    expect(errorsOf(() => detokenize({ a: ['{{ ssn-1 | no_such_filter }}'] }))).toHaveProperty(['args.a[0]']);
  });

  it('leaves strings without expressions, numbers and nulls as they are, and copies the data', () => {
    const out = detokenize({ a: 'plain', b: 1, c: null, d: true, card: '{{ card-1 }}' }) as { card: typeof card };
    expect(out).toMatchObject({ a: 'plain', b: 1, c: null, d: true });
    out.card.number = 'changed';
    expect(card.number).toBe('4242424242424242');
  });

  it('keeps a __proto__ key as a plain key', () => {
    const out = detokenize(JSON.parse('{"__proto__": {"polluted": "{{ ssn-1 }}"}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
