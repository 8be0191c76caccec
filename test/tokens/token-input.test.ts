import { describe, expect, it } from 'vitest';
import { parseMetadata } from '../../src/tokens/token-input-checks.js';
import { parseCreateTokenInput, parseUpdateTokenInput } from '../../src/tokens/token-input.js';
import { issuesToFieldErrors } from '../../src/validation/issues.js';
import { errorsOf } from '../support/field-errors.js';

const base = { type: 'card', data: { number: '4242424242424242' } };

describe('parseCreateTokenInput', () => {
  it('accepts the minimal body', () => {
    expect(parseCreateTokenInput(base)).toEqual(base);
  });

  it('accepts and returns every attribute, normalizing containers', () => {
    const body = {
      id: 'tok_{{ data.number | last4 }}',
      type: 'token',
      data: [1, 'two', { three: 3 }],
      mask: { a: '{{ data[0] }}' },
      containers: ['/General/High/', '/general/high/'],
      metadata: { customer: 'acme', empty: '' },
      search_indexes: ['{{ data[1] }}'],
      fingerprint_expression: '{{ data | stringify }}',
      deduplicate_token: true,
      expires_at: '1/31/2030',
    };
    expect(parseCreateTokenInput(body)).toEqual({ ...body, containers: ['/general/high/'] });
  });

  it('accepts primitive data and mask', () => {
    expect(parseCreateTokenInput({ type: 'token', data: false, mask: 'x' })).toEqual({ type: 'token', data: false, mask: 'x' });
    expect(parseCreateTokenInput({ type: 'token', data: 0 })).toEqual({ type: 'token', data: 0 });
  });

  it('treats null optional attributes as absent', () => {
    const body = { ...base, id: null, mask: null, containers: null, metadata: null, search_indexes: null, fingerprint_expression: null, deduplicate_token: null, expires_at: null };
    expect(parseCreateTokenInput(body)).toEqual(base);
  });

  it('requires type and data', () => {
    expect(errorsOf(() => parseCreateTokenInput({}))).toEqual({ type: ['is required'], data: ['is required'] });
    expect(errorsOf(() => parseCreateTokenInput({ type: 'token', data: null }))).toEqual({ data: ['is required'] });
  });

  it('rejects a body that is not an object', () => {
    for (const body of [null, undefined, 'x', 1, [base]]) {
      expect(errorsOf(() => parseCreateTokenInput(body))).toEqual({ body: ['must be a JSON object'] });
    }
  });

  it.each([
    ['id', 42],
    ['id', ''],
    ['id', 'x'.repeat(251)],
    ['type', 7],
    ['type', ''],
    ['type', { name: 'card' }],
    ['containers', '/pci/high/'],
    ['containers', []],
    ['metadata', 'customer=acme'],
    ['metadata', ['acme']],
    ['search_indexes', '{{ data }}'],
    ['search_indexes', Array.from({ length: 101 }, () => '{{ data }}')],
    ['fingerprint_expression', 5],
    ['fingerprint_expression', ['{{ data }}']],
    ['fingerprint_expression', 'x'.repeat(4097)],
    ['deduplicate_token', 'true'],
    ['deduplicate_token', 1],
    ['expires_at', 1893456000000],
    ['expires_at', { date: '2030-01-01' }],
    ['mask', Number.NaN],
    ['data', undefined],
  ])('rejects %s = %j with an error on that field', (field, value) => {
    const errors = errorsOf(() => parseCreateTokenInput({ ...base, [field]: value }));
    expect(Object.keys(errors)).toEqual([field]);
  });

  it('reports element errors by index', () => {
    expect(Object.keys(errorsOf(() => parseCreateTokenInput({ ...base, search_indexes: ['{{ data }}', 3, ''] })))).toEqual(['search_indexes[1]', 'search_indexes[2]']);
    expect(Object.keys(errorsOf(() => parseCreateTokenInput({ ...base, containers: ['/ok/', 'bad/'] })))).toEqual(['containers[1]']);
  });

  it('rejects metadata with a non-string value, naming the key', () => {
    const errors = errorsOf(() => parseCreateTokenInput({ ...base, metadata: { ok: 'x', count: 3, flag: true, nested: { a: 'b' }, gone: null } }));
    expect(errors).toEqual({
      'metadata.count': ['must be a string (metadata values are strings only)'],
      'metadata.flag': ['must be a string (metadata values are strings only)'],
      'metadata.nested': ['must be a string (metadata values are strings only)'],
      'metadata.gone': ['must be a string (metadata values are strings only)'],
    });
  });

  it('enforces metadata limits', () => {
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, 'v']));
    expect(errorsOf(() => parseCreateTokenInput({ ...base, metadata: many }))).toEqual({ metadata: ['must have at most 100 keys'] });
    expect(errorsOf(() => parseCreateTokenInput({ ...base, metadata: { ['k'.repeat(129)]: 'v' } }))).toEqual({ metadata: ['keys must be 1 to 128 characters'] });
    expect(errorsOf(() => parseCreateTokenInput({ ...base, metadata: { '': 'v' } }))).toEqual({ metadata: ['keys must be 1 to 128 characters'] });
    expect(errorsOf(() => parseCreateTokenInput({ ...base, metadata: { k: 'v'.repeat(1025) } }))).toEqual({ 'metadata.k': ['must be at most 1024 characters'] });
    expect(parseCreateTokenInput({ ...base, metadata: { ['k'.repeat(128)]: 'v'.repeat(1024) } }).metadata).toBeDefined();
  });

  it('keeps a "__proto__" metadata key as data', () => {
    const body = JSON.parse('{"type":"token","data":1,"metadata":{"__proto__":"x","constructor":"y"}}') as unknown;
    const metadata = parseCreateTokenInput(body).metadata!;
    expect(Object.getPrototypeOf(metadata)).toBe(Object.prototype);
    expect(Object.keys(metadata)).toEqual(['__proto__', 'constructor']);
    const bad = JSON.parse('{"type":"token","data":1,"metadata":{"__proto__":5}}') as unknown;
    expect(Object.keys(errorsOf(() => parseCreateTokenInput(bad)))).toEqual(['metadata.__proto__']);
  });

  it('rejects data and mask that are not JSON, naming the path', () => {
    expect(Object.keys(errorsOf(() => parseCreateTokenInput({ type: 'token', data: { a: [Number.POSITIVE_INFINITY] } })))).toEqual(['data.a[0]']);
    expect(Object.keys(errorsOf(() => parseCreateTokenInput({ ...base, mask: { f: () => 1 } })))).toEqual(['mask.f']);
  });

  it('rejects unknown attributes, naming each', () => {
    const errors = errorsOf(() => parseCreateTokenInput({ ...base, tenant_id: 'x', fingerprint: 'y' }));
    expect(Object.keys(errors)).toEqual(['tenant_id', 'fingerprint']);
    expect(errors['tenant_id']![0]).toContain('is not a recognized attribute; allowed: id, type, data');
  });

  it('does not echo an unknown attribute name that looks like data', () => {
    const errors = errorsOf(() => parseCreateTokenInput({ ...base, '4242424242424242': 1 }));
    expect(Object.keys(errors)).toEqual(['body']);
    expect(JSON.stringify(errors)).not.toContain('4242');
  });

  it('reports every problem of the body in one error', () => {
    const errors = errorsOf(() => parseCreateTokenInput({ type: 1, data: null, containers: ['x'], metadata: { a: 1 }, deduplicate_token: 'no', expires_at: 5, extra: true }));
    expect(Object.keys(errors).sort()).toEqual(['containers[0]', 'data', 'deduplicate_token', 'expires_at', 'extra', 'metadata.a', 'type']);
  });

  it('never quotes input values in messages', () => {
    const errors = errorsOf(() => parseCreateTokenInput({ type: 'secret-type-value', data: 1, id: 12345678, expires_at: 98765432 }));
    expect(JSON.stringify(errors)).not.toMatch(/12345678|98765432/);
  });
});

describe('parseUpdateTokenInput', () => {
  it('accepts an empty patch', () => {
    expect(parseUpdateTokenInput({})).toEqual({});
  });

  it('accepts every attribute', () => {
    const body = {
      data: { number: '4000000000006', cvc: null },
      mask: { number: null },
      metadata: { stale: null, fresh: 'yes' },
      containers: ['/PCI/'],
      search_indexes: ['{{ data.number }}'],
      fingerprint_expression: '{{ data.number }}',
      deduplicate_token: false,
      expires_at: '2030-01-01',
    };
    expect(parseUpdateTokenInput(body)).toEqual({ ...body, containers: ['/pci/'] });
  });

  it('accepts null where it means remove or reset', () => {
    const body = { mask: null, metadata: null, containers: null, search_indexes: null, fingerprint_expression: null, deduplicate_token: null, expires_at: null };
    expect(parseUpdateTokenInput(body)).toEqual(body);
  });

  it('rejects data: null (a token always has data)', () => {
    expect(errorsOf(() => parseUpdateTokenInput({ data: null }))).toEqual({ data: ['cannot be null: a token always has data'] });
  });

  it('rejects id and type, which cannot change, and unknown attributes', () => {
    const errors = errorsOf(() => parseUpdateTokenInput({ id: 'x', type: 'card', fingerprint: 'z' }));
    expect(errors['id']).toEqual(['cannot be changed; create a new token instead']);
    expect(errors['type']).toEqual(['cannot be changed; create a new token instead']);
    expect(errors['fingerprint']![0]).toContain('is not a recognized attribute');
  });

  it.each([
    ['metadata', { a: 1 }, 'metadata.a'],
    ['metadata', 'x', 'metadata'],
    ['containers', ['/a//'], 'containers[0]'],
    ['containers', [], 'containers'],
    ['search_indexes', [1], 'search_indexes[0]'],
    ['fingerprint_expression', 1, 'fingerprint_expression'],
    ['deduplicate_token', 'yes', 'deduplicate_token'],
    ['expires_at', 0, 'expires_at'],
    ['data', { a: Number.NaN }, 'data.a'],
    ['mask', [undefined], 'mask[0]'],
  ])('rejects %s = %j on %s', (field, value, path) => {
    expect(Object.keys(errorsOf(() => parseUpdateTokenInput({ [field]: value })))).toEqual([path]);
  });

  it('rejects a body that is not an object', () => {
    expect(errorsOf(() => parseUpdateTokenInput([]))).toEqual({ body: ['must be a JSON object'] });
  });
});

describe('parseMetadata', () => {
  it('rejects null values in a complete map and returns a fresh object', () => {
    expect(Object.keys(errorsOf(() => parseMetadata({ a: null })))).toEqual(['metadata.a']);
    const input = { a: 'b' };
    const output = parseMetadata(input);
    expect(output).toEqual(input);
    expect(output).not.toBe(input);
  });
});

describe('issuesToFieldErrors', () => {
  it('joins keys with dots and indexes with brackets under the prefix, and names the root body', () => {
    const issue = (path: unknown[], message: string) => ({ kind: 'schema', type: 'string', input: 1, expected: null, received: '1', message, path }) as never;
    expect(
      issuesToFieldErrors(
        [
          issue(
            [
              { type: 'object', key: 'a' },
              { type: 'array', key: 2 },
              { type: 'object', key: 'b' },
            ],
            'm1',
          ),
          issue([], 'm2'),
        ],
        'data',
      ),
    ).toEqual({ 'data.a[2].b': ['m1'], data: ['m2'] });
    expect(issuesToFieldErrors([issue([{ type: 'object', key: 'x' }], 'm')])).toEqual({ x: ['m'] });
    expect(issuesToFieldErrors([issue([], 'm')])).toEqual({ body: ['m'] });
  });
});
