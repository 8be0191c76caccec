import { describe, expect, it } from 'vitest';
import { JsonPathSyntaxError, parseJsonPath, selectJsonPath } from '../../src/expressions/json-path.js';

describe('parseJsonPath', () => {
  it('parses $, .key, quoted keys and indexes', () => {
    expect(parseJsonPath('$')).toEqual([]);
    expect(parseJsonPath('$.a.b_c.d-e')).toEqual(['a', 'b_c', 'd-e']);
    expect(parseJsonPath(`$['a b']["c'd"][3].e`)).toEqual(['a b', "c'd", 3, 'e']);
    expect(parseJsonPath("$['it\\'s']")).toEqual(["it's"]);
  });
  it('refuses paths outside the subset', () => {
    for (const path of ['', 'a.b', '$.', '$..a', '$.*', '$[*]', '$[-1]', '$[1:2]', '$[?(@.a)]', "$['a'", '$.a[', 'x'.repeat(2000)]) {
      expect(() => parseJsonPath(path), path).toThrow(JsonPathSyntaxError);
    }
  });
});

describe('selectJsonPath', () => {
  const value = { a: { b: [1, { c: null }] }, arr: [0] };
  it('selects one value', () => {
    expect(selectJsonPath(value, ['a', 'b', 1, 'c'])).toBeNull();
    expect(selectJsonPath(value, ['a', 'b', 0])).toBe(1);
    expect(selectJsonPath(value, [])).toBe(value);
  });
  it('gives undefined for anything missing, inherited or of the wrong kind', () => {
    expect(selectJsonPath(value, ['nope'])).toBeUndefined();
    expect(selectJsonPath(value, ['a', 'b', 5])).toBeUndefined();
    expect(selectJsonPath(value, ['arr', 'length'])).toBeUndefined();
    expect(selectJsonPath(value, ['a', 0])).toBeUndefined();
    expect(selectJsonPath(value, ['constructor'])).toBeUndefined();
    expect(selectJsonPath('text', ['length'])).toBeUndefined();
    expect(selectJsonPath(null, ['a'])).toBeUndefined();
  });
});
