// What an expression may contain (src/expressions/template-limits.ts) and the cost of what it may:
// the hostile templates are refused when compiled, that is when a mask,
// id, fingerprint or search index is saved, and the vault filters charge the memory limit.
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { errorsOf } from '../support/field-errors.js';
import { ExpressionEngine, MAX_MASK_TEMPLATES } from '../../src/expressions/engine.js';
import { MAX_ALIAS_LENGTH } from '../../src/expressions/alias-hmac-filters.js';
import { MAX_TEMPLATE_FILTERS, MAX_TEMPLATE_NODES } from '../../src/expressions/template-limits.js';

const engine = new ExpressionEngine();
const compileError = (template: string, field = 'search_indexes[3]') => errorsOf(() => engine.compile(template, field))[field]?.[0];

describe('tags', () => {
  it('refuses loops and repeating tags, whatever they loop over', () => {
    const hostile = [
      '{% for a in (1..100000) %}{% for b in (1..100000) %}{% endfor %}{% endfor %}',
      '{% for a in data %}{% for b in data %}{% for c in data %}{% endfor %}{% endfor %}{% endfor %}',
      '{% for a in (1..1000000000) %}x{% endfor %}',
      "{% assign s = 'ab' %}{% for i in (1..64) %}{% assign s = s | append: s %}{% endfor %}{{ s | size }}",
      '{% tablerow a in data %}{{ a }}{% endtablerow %}',
      "{% cycle 'a', 'b' %}",
      '{% capture s %}{{ data }}{% endcapture %}{{ s }}',
      '{% increment n %}',
      '{% decrement n %}',
      '{% liquid assign a = data %}{{ a }}',
    ];
    for (const template of hostile) {
      expect(compileError(template), template).toMatch(/^uses the tag '\w+'; expressions may only use if, unless, case, assign, echo, raw and comments$/);
      // A render of the same text is refused the same way (nothing parses around the check).
      expect(() => engine.render(template, { data: [1, 2] }, 'mask')).toThrow(ValidationError);
    }
  });
  it('accepts the straight-line tags a mask, index or fingerprint needs', () => {
    const template =
      "{% comment %}x{% endcomment %}{% # note %}{% assign n = data.number | remove: ' ' %}" +
      "{% if n.size > 15 %}{{ n | card_mask }}{% elsif n == '' %}-{% else %}{% echo n | last4 %}{% endif %}" +
      "{% unless data.brand %}?{% endunless %}{% case data.brand %}{% when 'visa' %}V{% else %}O{% endcase %}{% raw %}{{ }}{% endraw %}";
    expect(engine.render(template, { data: { number: '4242 4242 4242 4242', brand: 'visa' } }, 'mask')).toBe('424242XXXXXX4242V{{ }}');
  });
  it('checks the templates nested in if, unless and case branches', () => {
    expect(compileError('{% if data %}{% case data %}{% when 1 %}{% for a in data %}{% endfor %}{% endcase %}{% endif %}')).toMatch(/tag 'for'/);
    expect(compileError('{% unless data %}{{ data | pad_left: 5000 }}{% endunless %}')).toMatch(/pad_left: width/);
  });
});

describe('size', () => {
  it(`refuses more than ${MAX_TEMPLATE_NODES} tags and outputs`, () => {
    expect(() => engine.compile('{{ data }}'.repeat(MAX_TEMPLATE_NODES), 'id')).not.toThrow();
    expect(compileError('{{ data }}'.repeat(MAX_TEMPLATE_NODES + 1))).toBe(`has more than ${MAX_TEMPLATE_NODES} tags and outputs`);
    expect(compileError(`{% if data %}${'{% if data %}x{% endif %}'.repeat(MAX_TEMPLATE_NODES)}{% endif %}`)).toMatch(/more than/);
  });
  it(`refuses more than ${MAX_TEMPLATE_FILTERS} filters in a template`, () => {
    expect(() => engine.compile(`{{ data${' | downcase'.repeat(MAX_TEMPLATE_FILTERS)} }}`, 'id')).not.toThrow();
    expect(compileError(`{{ data${' | downcase'.repeat(MAX_TEMPLATE_FILTERS + 1)} }}`)).toBe(`uses more than ${MAX_TEMPLATE_FILTERS} filters`);
    expect(compileError(`{% assign a = data${' | downcase'.repeat(20)} %}{% if a${' | upcase'.repeat(20)} %}{% endif %}`)).toMatch(/filters/);
  });
  it(`refuses a mask of more than ${MAX_MASK_TEMPLATES} templates, naming the mask`, () => {
    const ok = Object.fromEntries(Array.from({ length: MAX_MASK_TEMPLATES }, (_, i) => [`k${i}`, '{{ data }}']));
    expect(() => engine.compileTree(ok, 'mask')).not.toThrow();
    const errors = errorsOf(() => engine.compileTree({ ...ok, extra: ['{{ data }}'] }, 'mask'));
    expect(errors).toEqual({ mask: [`holds more than ${MAX_MASK_TEMPLATES} expressions`] });
  });
});

describe('growth', () => {
  it('refuses ranges, which only build large arrays', () => {
    for (const template of [
      "{{ (1..100000000) | join: 'xxxxxxxx' }}",
      '{% assign r = (1..100000000) %}{{ r | size }}',
      '{{ data | concat: (1..100000000) }}',
      '{% if (1..5) contains 3 %}{% endif %}',
    ]) {
      expect(compileError(template), template).toBe('uses a range such as (1..n), which expressions may not use');
    }
  });
  it('refuses sorting and the filters that evaluate an expression per item', () => {
    for (const name of ['sort', 'sort_natural', 'where_exp', 'reject_exp', 'group_by_exp', 'has_exp', 'find_exp', 'find_index_exp']) {
      const template = name.endsWith('_exp') ? `{{ data | ${name}: 'x', 'x > 1' }}` : `{{ data | ${name} }}`;
      expect(compileError(template), template).toBe(`uses the filter '${name}', which expressions may not use`);
    }
  });
  it('refuses a pad width that is too large or not written in the expression', () => {
    expect(compileError('{{ data | pad_left: 100000000 }}', 'mask.number')).toBe('pad_left: width must be a whole number from 0 to 1000 written in the expression');
    expect(compileError("{{ data.a | pad_right: data.width, '0' }}")).toMatch(/pad_right: width must be a whole number/);
    expect(compileError('{{ data | pad_left }}')).toMatch(/pad_left: width/);
    expect(engine.render("{{ data | pad_left: 1000, '0' | size }}", { data: 'x' }, 'f')).toBe('1000');
  });
  it('charges the memory limit for text the vault filters build', () => {
    // stringify doubles the backslashes of its input: 30 in a row made 2^30 characters in one output.
    const chain = `{{ data${' | stringify'.repeat(30)} | size }}`;
    expect(errorsOf(() => engine.render(chain, { data: '"' }, 'fingerprint_expression'))).toEqual({
      fingerprint_expression: ['used more memory than expressions are allowed'],
    });
    const big = 'a'.repeat(600_000);
    expect(errorsOf(() => engine.render('{{ data | to_base16 | to_base64 }}', { data: big }, 'f')).f?.[0]).toMatch(/more memory/);
    expect(errorsOf(() => engine.render('{{ data | json_stringify | reveal_last: 4 | pad_left: 5 }}', { data: big + big }, 'f')).f?.[0]).toMatch(/more memory/);
  });
  it('bounds the input of the alias filters, one random draw per character', () => {
    expect(engine.render('{{ data | alias_preserve_length | size }}', { data: 'a'.repeat(MAX_ALIAS_LENGTH) }, 'f')).toBe(String(MAX_ALIAS_LENGTH));
    expect(errorsOf(() => engine.render('{{ data | alias_preserve_format }}', { data: 'a'.repeat(MAX_ALIAS_LENGTH + 1) }, 'f')).f?.[0]).toBe(
      `alias_preserve_format: the value must be at most ${MAX_ALIAS_LENGTH} characters`,
    );
  });
  it('rejects long non-numbers in linear time (the patterns used to backtrack quadratically)', () => {
    // 200,000 digits and a letter: minutes with the former patterns. Counted, not timed: each filter
    // looks at a bounded prefix, so the test only checks the answer.
    const digits = `${'1'.repeat(200_000)}x`;
    expect(errorsOf(() => engine.render('{{ data | card_mask }}', { data: digits }, 'f')).f?.[0]).toMatch(/card_mask expects a card number/);
    expect(errorsOf(() => engine.render('{{ data | to_number }}', { data: digits }, 'f')).f?.[0]).toMatch(/to_number expects/);
    expect(errorsOf(() => engine.render('{{ data.n | card_bin: data.s }}', { data: { n: digits, s: '-'.repeat(200_000) } }, 'f')).f?.[0]).toMatch(/card_bin expects/);
    expect(engine.render('{{ data | to_number }}', { data: ' 12.50 ' }, 'f')).toBe('12.5');
    expect(engine.render('{{ data | card_mask }}', { data: '4242-4242-4242-4242' }, 'f')).toBe('4242-42XX-XXXX-4242');
  });
});
