/**
 * The expression engine's liquid-free fast paths (fast-paths.ts: a plain property expression such
 * as `{{ data.number }}`, the default fingerprint; a property through vault filters with literal
 * arguments such as `{{ data.number | reveal_last: 4 }}`, the card mask) render exactly what liquid
 * renders, or fail where liquid fails: a property test over generated tokens (card-like data,
 * nested objects, arrays, the names liquid resolves itself such as `size`, `first` and prototype
 * members) and generated expressions, each rendered by the engine and by the same liquid instance
 * the engine uses for every other template (the general path).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExpressionEngine } from '../../src/expressions/engine.js';
import { createLiquid } from '../../src/expressions/liquid-instance.js';

const RUNS = Number(process.env.TOKENVAULT_FUZZ_RUNS ?? 300);
const KEYS = ['number', 'expiration_month', 'cvc', 'a', 'b', 'size', 'first', 'last', 'constructor', 'toString', 'length', '0'];

const scalar = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.stringMatching(/^[0-9]{12,19}$/),
  fc.integer({ min: -1000, max: 100000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);
const value = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('node'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('node'), { maxKeys: 4 }),
  ),
})).node;
const data = fc.oneof(value, fc.record({ number: fc.stringMatching(/^[0-9]{12,19}$/), expiration_month: fc.integer({ min: 1, max: 12 }) }));

const segment = fc.oneof(
  fc.constantFrom(...KEYS).map((k) => (/^[a-z_]+$/.test(k) ? `.${k}` : `['${k}']`)),
  fc.constantFrom(...KEYS).map((k) => `['${k}']`),
);
const path = fc.array(segment, { minLength: 0, maxLength: 3 }).map((segments) => `data${segments.join('')}`);
const filter = fc.oneof(
  fc.integer({ min: 0, max: 20 }).map((n) => `reveal_last: ${n}`),
  fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 6 })).map(([a, b]) => `reveal: ${a}, ${b}`),
  fc.constantFrom('last4', 'card_bin', 'card_mask', 'to_string', 'stringify', 'json', "pad_left: 8, '0'", "reveal_last: 4, '#'", 'to_number'),
);
const expression = fc.tuple(path, fc.array(filter, { maxLength: 2 })).map(([p, filters]) => `{{ ${[p, ...filters].join(' | ')} }}`);

/** What rendering gives: the text, or that it failed. */
function outcome(render: () => string): { text: string } | { failed: true } {
  try {
    return { text: render() };
  } catch {
    return { failed: true };
  }
}

describe('expression fast paths', () => {
  it('render what liquid renders for every generated token and property expression', () => {
    const engine = new ExpressionEngine();
    const liquid = createLiquid();
    fc.assert(
      fc.property(data, expression, (d, template) => {
        const vars = { data: d, metadata: {} };
        const fast = outcome(() => engine.render(template, vars, 'fingerprint_expression', engine.budget()));
        const general = outcome(() => liquid.parseAndRenderSync(template, { ...vars }) as string);
        expect(fast, template).toEqual(general);
      }),
      { numRuns: RUNS },
    );
  });

  it('take the fast path for the default fingerprint and card mask (the cases the property must cover)', () => {
    const engine = new ExpressionEngine();
    const card = { data: { number: '4242424242424242', expiration_month: 12 } };
    expect(engine.render('{{ data.number }}', card, 'f')).toBe('4242424242424242');
    expect(engine.render('{{ data.number | reveal_last: 4 }}', card, 'f')).toBe('XXXXXXXXXXXX4242');
    expect(engine.render('{{ data.expiration_month }}', card, 'f')).toBe('12');
  });
});
