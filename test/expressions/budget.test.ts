// The expression time of one service call (src/expressions/budget.ts), driven by an injected time
// source that moves only when read: no render is timed.
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { errorsOf } from '../support/field-errors.js';
import { deepFreeze } from '../../src/common/frozen.js';
import { ExpressionBudget } from '../../src/expressions/budget.js';
import { ExpressionEngine } from '../../src/expressions/engine.js';

/** A time source that advances `step` ms each time it is read. */
function ticking(step: number): { now: () => number; reads: () => number } {
  let t = 0;
  let reads = 0;
  return {
    now: () => {
      reads++;
      return (t += step);
    },
    reads: () => reads,
  };
}

const EXHAUSTED = /^was not rendered: the expressions of this request used up their \d+ ms of rendering time$/;

describe('ExpressionBudget', () => {
  it('adds up the time of the renders, then refuses every later one, naming the field', () => {
    const time = ticking(10);
    const engine = new ExpressionEngine({ requestBudgetMs: 100, now: time.now });
    const budget = engine.budget();
    const rendered: string[] = [];
    const errors = errorsOf(() => {
      for (let i = 0; i < 100; i++) rendered.push(engine.render('{{ data | last4 }}', { data: `card${i}` }, `search_indexes[${i}]`, budget));
    });
    // Each render reads the time before and after it: 10 ms each, so 10 renders use up 100 ms.
    expect(rendered).toHaveLength(10);
    expect(Object.keys(errors)).toEqual(['search_indexes[10]']);
    expect(errors['search_indexes[10]']?.[0]).toMatch(EXHAUSTED);
    expect(budget.exhausted).toBe(true);
    const reads = time.reads();
    expect(() => engine.render('{{ data }}', { data: 'x' }, 'id', budget)).toThrow(ValidationError);
    // Once spent it stays spent, without reading the time again.
    expect(time.reads()).toBe(reads);
  });

  it('is shared by the leaves of a mask, planned (frozen) or not', () => {
    for (const frozen of [false, true]) {
      const engine = new ExpressionEngine({ requestBudgetMs: 25, now: ticking(10).now });
      const leaves = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`k${i}`, '{{ data | reveal_last: 2 }}']));
      const mask = frozen ? deepFreeze(leaves) : leaves;
      const budget = engine.budget();
      // k0, k1 and k2 run (10, 20, 30 ms); k3 finds 30 ≥ 25.
      expect(Object.keys(errorsOf(() => engine.renderTree(mask, { data: '1234' }, 'mask', budget)))).toEqual(['mask.k3']);
    }
  });

  it('counts only time inside renders', () => {
    const time = ticking(10);
    const engine = new ExpressionEngine({ requestBudgetMs: 25, now: time.now });
    const budget = engine.budget();
    engine.render('{{ data }}', { data: 1 }, 'f', budget);
    // Time that passes between renders (store reads, other requests) is not charged.
    for (let i = 0; i < 100; i++) time.now();
    engine.render('{{ data }}', { data: 1 }, 'f', budget);
    engine.render('{{ data }}', { data: 1 }, 'f', budget);
    expect(() => engine.render('{{ data }}', { data: 1 }, 'f', budget)).toThrow(ValidationError);
  });

  it('charges a render that fails, and gives each call its own budget, and leaves renders without one unlimited', () => {
    const engine = new ExpressionEngine({ requestBudgetMs: 15, now: ticking(10).now });
    const spent = engine.budget();
    expect(() => engine.render('{{ data | to_number }}', { data: 'x' }, 'f', spent)).toThrow(/to_number/);
    engine.render('{{ data }}', { data: 1 }, 'f', spent);
    expect(errorsOf(() => engine.render('{{ data }}', { data: 1 }, 'f', spent)).f?.[0]).toMatch(EXHAUSTED);
    expect(engine.render('{{ data }}', { data: 2 }, 'f', engine.budget())).toBe('2');
    for (let i = 0; i < 50; i++) expect(engine.render('{{ data }}', { data: i }, 'f')).toBe(String(i));
  });

  it('refuses a bad budget option', () => {
    expect(errorsOf(() => new ExpressionEngine({ requestBudgetMs: 0 }))).toEqual({ requestBudgetMs: ['must be a positive integer'] });
  });

  it('defaults to the monotonic performance clock', () => {
    const budget = new ExpressionBudget(60_000);
    expect(budget.run('f', () => 'rendered')).toBe('rendered');
    expect(budget.exhausted).toBe(false);
  });
});
