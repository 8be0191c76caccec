import { describe, expect, it, vi } from 'vitest';
import { Liquid } from 'liquidjs';
import { ValidationError } from '../../src/errors/errors.js';
import { deepFreeze } from '../../src/common/frozen.js';
import { ExpressionEngine } from '../../src/expressions/engine.js';
import { vaultFilters } from '../../src/expressions/filters.js';
import { MAX_TEMPLATE_LENGTH } from '../../src/expressions/liquid-instance.js';
import { errorsOf } from '../support/field-errors.js';

describe('render', () => {
  const engine = new ExpressionEngine();
  it('renders data and metadata', () => {
    const vars = { data: { number: '4242424242424242' }, metadata: { customer: 'c1' } };
    expect(engine.render('{{ data.number }}|{{ metadata.customer }}', vars, 'f')).toBe('4242424242424242|c1');
  });
  it('renders variables not given, and unknown properties, as empty', () => {
    expect(engine.render('[{{ metadata.x }}{{ data.a.b.c }}{{ nothing }}]', { data: {} }, 'f')).toBe('[]');
  });
  it('does not expose prototype properties', () => {
    expect(engine.render('[{{ data.constructor }}{{ data.toString }}{{ data.__proto__ }}]', { data: {} }, 'f')).toBe('[]');
  });
  it('never changes the variables it is given', () => {
    const vars = { data: 'x', metadata: {} };
    expect(engine.render("{% assign data = 'changed' %}{% assign metadata = 1 %}{{ data }}{{ metadata }}", vars, 'f')).toBe('changed1');
    expect(vars).toEqual({ data: 'x', metadata: {} });
    expect(engine.render('{{ data }}', vars, 'f')).toBe('x');
  });
  it('does not escape output', () => {
    expect(engine.render('{{ data }}', { data: `<a href="x">&'</a>` }, 'f')).toBe(`<a href="x">&'</a>`);
  });
  it('renders the single-variable form exactly as liquid does', () => {
    const liquid = new Liquid();
    const cases: Array<[string, unknown]> = [
      ['{{ data }}', 'text'],
      ['{{ data }}', 42],
      ['{{ data }}', -0],
      ['{{ data }}', 1.5e21],
      ['{{ data }}', 0.1],
      ['{{ data }}', true],
      ['{{ data }}', null],
      ['{{ data }}', { a: 1 }],
      ['{{ data }}', [1, [2, 'x']]],
      ['{{ data.a.b }}', { a: { b: 7 } }],
      ['{{data.a.b}}', { a: { b: false } }],
      ['{{- data.a -}}', { a: 'x' }],
      ['{{ data.a.b }}', { a: null }],
      ['{{ data.a.b }}', { a: 'string' }],
      ['{{ data.number.size }}', { number: '4242' }],
      ['{{ data.list.first }}', { list: ['x', 'y'] }],
      ['{{ data.list.last }}', { list: ['x', 'y'] }],
      ['{{ data.size }}', { size: 3, b: 1 }],
      ['{{ data.length }}', 'abcd'],
      ["{{ data['odd key'] }}", { 'odd key': 'v' }],
      ['{{ data[0] }}', ['zero']],
    ];
    for (const [template, data] of cases) {
      const expected = liquid.parseAndRenderSync(template, { data }) as string;
      expect(engine.render(template, { data }, 'f'), `${template} with ${JSON.stringify(data)}`).toBe(expected);
    }
  });
});

describe('vault filter pipelines rendered without liquid', () => {
  it('render exactly as liquid with the same filters does, and fall back when the result is not text', () => {
    const liquid = new Liquid({ strictFilters: true });
    for (const [name, filter] of Object.entries(vaultFilters)) liquid.registerFilter(name, filter as never);
    const engine = new ExpressionEngine();
    const card = { number: '4242424242424242', expiration_month: 3, expiration_year: 2031 };
    const cases: Array<[string, unknown]> = [
      ['{{ data.number | reveal_last: 4 }}', card],
      ['{{ data.number | reveal_last: 4, "#" }}', card],
      ["{{ data | reveal: 0, 4, 'X', '-' }}", '123-45-6789'],
      ['{{ data.number | last4 }}', card],
      ['{{ data.number | card_mask }}', card],
      ['{{ data.number | card_bin }}', card],
      ["{{ data | card_exp: 'MM/YY' }}", card],
      ["{{ data.number | pad_left: 20, '0' }}", card],
      ['{{ data.missing | reveal_last: 4 }}', card],
      ['{{ data.number | reveal_last: 20 }}', card],
      ["{{ data | hmac: 'sha-256', 'k' | to_base64 }}", 'value'],
      ["{{ data | hmac: 'sha-256', 'k' }}", 'value'],
      ['{{ data | to_number }}', '42'],
      ['{{ data | stringify }}', { a: [1, 'x'] }],
      ['{{ data.list.size | to_string }}', { list: [1, 2, 3] }],
    ];
    for (const [template, data] of cases) {
      const expected = liquid.parseAndRenderSync(template, { data }) as string;
      expect(engine.render(template, { data }, 'f'), `${template} with ${JSON.stringify(data)}`).toBe(expected);
    }
  });

  it('map filter errors to a validation error naming the field, without the data', () => {
    const engine = new ExpressionEngine();
    const errors = errorsOf(() => engine.render("{{ data | card_exp: 'MM/YY' }}", { data: 'SECRET-123' }, 'mask.exp'));
    expect(Object.keys(errors)).toEqual(['mask.exp']);
    expect(JSON.stringify(errors)).not.toContain('SECRET-123');
  });
});

describe('errors', () => {
  const engine = new ExpressionEngine();
  it('reports an unknown filter as a validation error naming the field', () => {
    const errors = errorsOf(() => engine.compile('{{ data | no_such_filter }}', 'fingerprint_expression'));
    expect(Object.keys(errors)).toEqual(['fingerprint_expression']);
    expect(errors.fingerprint_expression?.[0]).toMatch(/unknown filter 'no_such_filter'/);
    expect(() => engine.render('{{ data | no_such_filter }}', { data: 'x' }, 'search_indexes[0]')).toThrow(ValidationError);
  });
  it('reports syntax errors without quoting the template', () => {
    const template = "{{ data | hmac: 'sha-256', 'top-secret-key' ";
    const errors = errorsOf(() => engine.compile(template, 'id'));
    expect(errors.id?.[0]).toMatch(/unclosed tag or output/);
    expect(JSON.stringify(errors)).not.toContain('top-secret-key');
    expect(errorsOf(() => engine.compile('{% if %}', 'id')).id?.[0]).toMatch(/not a valid expression/);
    expect(errorsOf(() => engine.compile('{% nope %}', 'id')).id?.[0]).toMatch(/tag 'nope', which is unknown/);
  });
  it('turns a failing filter into a validation error naming the field', () => {
    const errors = errorsOf(() => engine.render('{{ data | to_number }}', { data: 'abc' }, 'search_indexes[1]'));
    expect(errors).toEqual({ 'search_indexes[1]': ['to_number expects a number or numeric text'] });
  });
  it('never puts variable values into error messages', () => {
    const secret = 'SECRET-123';
    const templates = [
      '{{ data | to_number }}',
      "{{ data | card_exp: 'MM/YY' }}",
      '{{ data | card_bin }}',
      '{{ data | alias_card }}',
      '{{ data | to_boolean }}',
      '{{ data | base64_decode }}',
      '{{ data | json: data }}',
      "{{ metadata.note | pad_left: data, '0' }}",
      '{{ data | reveal_last: 2, data }}',
    ];
    for (const template of templates) {
      let caught: unknown;
      try {
        engine.render(template, { data: secret, metadata: { note: secret } }, 'mask');
      } catch (error) {
        caught = error;
      }
      expect(caught, template).toBeInstanceOf(ValidationError);
      const error = caught as ValidationError;
      expect(error.message).not.toContain(secret);
      expect(JSON.stringify(error.errors)).not.toContain(secret);
      expect(error.errors.mask).toBeDefined();
    }
  });
  it('refuses a template that is not a string', () => {
    expect(errorsOf(() => engine.compile(42 as unknown as string, 'id'))).toEqual({ id: ['must be a string expression'] });
  });
  it('refuses an overly long template', () => {
    const errors = errorsOf(() => engine.compile('x'.repeat(MAX_TEMPLATE_LENGTH + 1), 'id'));
    expect(errors.id?.[0]).toMatch(/longer than/);
  });
});

describe('safety', () => {
  const engine = new ExpressionEngine();
  it('refuses include, render and layout at compile time', () => {
    for (const tag of ['include', 'render', 'layout']) {
      const errors = errorsOf(() => engine.compile(`{% ${tag} '/etc/passwd' %}`, 'mask'));
      expect(errors.mask?.[0]).toMatch(new RegExp(`tag '${tag}', which is not allowed`));
      expect(() => engine.render(`{% ${tag} 'package.json' %}`, {}, 'mask')).toThrow(ValidationError);
      expect(() => engine.compile(`{% liquid ${tag} 'package.json' %}`, 'mask')).toThrow(ValidationError);
    }
  });
  it('bounds exponential string growth by the memory limit', () => {
    // No loops, but each assign doubles the text: 25 of them (within the node and filter limits) would make 2^26 characters.
    const template = `{% assign s = 'ab' %}${'{% assign s = s | append: s %}'.repeat(25)}{{ s | size }}`;
    expect(errorsOf(() => engine.render(template, {}, 'mask')).mask?.[0]).toMatch(/more memory/);
  });
});

// A frozen tree takes another path (a render plan built once and cached): every rule holds on both,
// and the frozen variant renders twice so that the second render uses the cached plan.
describe.each([
  ['as given', false],
  ['frozen, from its cached plan', true],
])('renderTree (%s)', (_name, frozen) => {
  const realEngine = new ExpressionEngine();
  const engine = {
    renderTree(tree: unknown, vars: Record<string, unknown>, field: string): unknown {
      if (!frozen) return realEngine.renderTree(tree, vars, field);
      const shared = deepFreeze(tree);
      try {
        realEngine.renderTree(shared, vars, field);
      } catch {
        // The second call must fail the same way; the assertions below check it.
      }
      return realEngine.renderTree(shared, vars, field);
    },
  };
  const card = { number: '4242424242424242', expiration_month: 3, expiration_year: 2031, meta: { brand: 'visa' } };

  it('keeps the JSON type of single-variable leaves and renders the others as text', () => {
    const mask = {
      number: '{{ data.number | reveal_last: 4 }}',
      expiration_month: '{{ data.expiration_month }}',
      expiration_year: '{{data.expiration_year}}',
      meta: '{{ data.meta }}',
      cvc: '{{ data.cvc }}',
      label: 'month {{ data.expiration_month }}',
      filtered: '{{ data.expiration_month | plus: 1 }}',
      fixed: 5,
      flag: true,
      nothing: null,
      list: ['{{ data.number | last4 }}', '{{ data.expiration_year }}', 1],
    };
    expect(engine.renderTree(mask, { data: card }, 'mask')).toEqual({
      number: 'XXXXXXXXXXXX4242',
      expiration_month: 3,
      expiration_year: 2031,
      meta: { brand: 'visa' },
      cvc: null,
      label: 'month 3',
      filtered: '4',
      fixed: 5,
      flag: true,
      nothing: null,
      list: ['4242', 2031, 1],
    });
  });
  it('renders a primitive tree', () => {
    expect(engine.renderTree('{{ data | reveal_last: 4 }}', { data: '123456789' }, 'mask')).toBe('XXXXX6789');
    expect(engine.renderTree('{{ data }}', { data: 12 }, 'mask')).toBe(12);
    expect(engine.renderTree(7, { data: 'x' }, 'mask')).toBe(7);
  });
  it('keeps the type of values liquid resolves specially', () => {
    expect(engine.renderTree('{{ data.number.size }}', { data: card }, 'mask')).toBe(16);
    expect(engine.renderTree('{{ data[1] }}', { data: [10, 20] }, 'mask')).toBe(20);
    expect(engine.renderTree('{{ data.constructor }}', { data: {} }, 'mask')).toBeNull();
  });
  it('returns copies, never the data objects themselves', () => {
    const data = { meta: { brand: 'visa' } };
    const out = engine.renderTree({ m: '{{ data.meta }}' }, { data }, 'mask') as { m: { brand: string } };
    out.m.brand = 'changed';
    expect(data.meta.brand).toBe('visa');
  });
  it('keeps a __proto__ key as a plain key', () => {
    const tree = JSON.parse('{"__proto__": "{{ data }}"}') as unknown;
    const out = engine.renderTree(tree, { data: 'x' }, 'mask') as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toBe('x');
  });
  it('names the leaf path in errors', () => {
    const mask = { card: { number: '{{ data | to_number }}' }, list: ['ok', '{{ data | card_exp }}'] };
    expect(errorsOf(() => engine.renderTree({ card: mask.card }, { data: 'abc' }, 'mask'))).toEqual({
      'mask.card.number': ['to_number expects a number or numeric text'],
    });
    expect(Object.keys(errorsOf(() => engine.renderTree({ list: mask.list }, { data: 'abc' }, 'mask')))).toEqual(['mask.list[1]']);
  });
  it('names the field it is given in errors, whichever field rendered the tree before', () => {
    const tree = { n: '{{ data | to_number }}' };
    expect(engine.renderTree(tree, { data: '7' }, 'mask')).toEqual({ n: '7' });
    expect(Object.keys(errorsOf(() => engine.renderTree(tree, { data: 'abc' }, 'other')))).toEqual(['other.n']);
  });
  it('returns a new, unfrozen result each time', () => {
    const tree = { a: { b: '{{ data }}' }, c: ['x'] };
    const first = engine.renderTree(tree, { data: 1 }, 'mask') as { a: { b: unknown }; c: string[] };
    expect(Object.isFrozen(first) || Object.isFrozen(first.a) || Object.isFrozen(first.c)).toBe(false);
    first.a.b = 'changed';
    first.c.push('y');
    expect(engine.renderTree(tree, { data: 1 }, 'mask')).toEqual({ a: { b: 1 }, c: ['x'] });
  });
  it('refuses a tree nested too deeply', () => {
    let tree: unknown = '{{ data }}';
    for (let i = 0; i < 100; i++) tree = [tree];
    expect(() => engine.renderTree(tree, { data: 1 }, 'mask')).toThrow(ValidationError);
  });
});

describe('renderTree of a frozen tree whose inner objects are not frozen', () => {
  it('renders what the tree holds now, not a plan of what it held', () => {
    const engine = new ExpressionEngine();
    const inner: Record<string, unknown> = { a: '{{ data.x }}' };
    const tree = Object.freeze({ inner });
    expect(engine.renderTree(tree, { data: { x: 1, y: 2 } }, 'mask')).toEqual({ inner: { a: 1 } });
    inner['a'] = '{{ data.y }}';
    expect(engine.renderTree(tree, { data: { x: 1, y: 2 } }, 'mask')).toEqual({ inner: { a: 2 } });
  });
});

describe('compileTree', () => {
  const engine = new ExpressionEngine();
  it('accepts a valid tree and names the bad leaf otherwise', () => {
    expect(() => engine.compileTree({ a: '{{ data | last4 }}', b: [1, '{{ data }}'] }, 'mask')).not.toThrow();
    const errors = errorsOf(() => engine.compileTree({ a: '{{ data }}', b: [1, '{{ data | nope }}'] }, 'mask'));
    expect(Object.keys(errors)).toEqual(['mask.b[1]']);
  });
});

describe('cache', () => {
  it('parses a template once and reuses it', () => {
    const engine = new ExpressionEngine();
    const parse = vi.spyOn(Liquid.prototype, 'parse');
    try {
      engine.render('{{ data | last4 }}', { data: '123456' }, 'f');
      engine.render('{{ data | last4 }}', { data: '654321' }, 'f');
      engine.compile('{{ data | last4 }}', 'f');
      expect(parse).toHaveBeenCalledTimes(1);
      expect(engine.cacheStats()).toEqual({ size: 1, hits: 2, misses: 1 });
    } finally {
      parse.mockRestore();
    }
  });
  it('evicts the least recently used template beyond cacheSize', () => {
    const engine = new ExpressionEngine({ cacheSize: 2 });
    engine.compile('{{ a }}', 'f');
    engine.compile('{{ b }}', 'f');
    engine.compile('{{ a }}', 'f'); // a is now the most recently used
    engine.compile('{{ c }}', 'f'); // evicts b
    expect(engine.cacheStats()).toEqual({ size: 2, hits: 1, misses: 3 });
    engine.compile('{{ a }}', 'f');
    expect(engine.cacheStats().hits).toBe(2);
    engine.compile('{{ b }}', 'f');
    expect(engine.cacheStats().misses).toBe(4);
  });
  it('can be turned off with cacheSize 0', () => {
    const engine = new ExpressionEngine({ cacheSize: 0 });
    engine.render('{{ data }}', { data: 1 }, 'f');
    engine.render('{{ data }}', { data: 1 }, 'f');
    expect(engine.cacheStats()).toEqual({ size: 0, hits: 0, misses: 2 });
  });
  it('refuses a bad cacheSize', () => {
    expect(errorsOf(() => new ExpressionEngine({ cacheSize: -1 }))).toEqual({ cacheSize: ['must be a non-negative integer'] });
    expect(() => new ExpressionEngine({ cacheSize: 1.5 })).toThrow(ValidationError);
  });
});
