import { describe, expect, it } from 'vitest';
import { mergePatch } from '../../src/tokens/merge-patch.js';

describe('mergePatch (RFC 7386)', () => {
  // RFC 7386 Appendix A, every example: [original, patch, result].
  const appendixA: [unknown, unknown, unknown][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  it.each(appendixA)('%j + %j', (target, patch, expected) => {
    expect(mergePatch(target, patch)).toEqual(expected);
  });

  it('merges the RFC 7386 section 3 example', () => {
    const target = { title: 'Goodbye!', author: { givenName: 'John', familyName: 'Doe' }, tags: ['example', 'sample'], content: 'This will be unchanged' };
    const patch = { title: 'Hello!', phoneNumber: '+01-123-456-7890', author: { familyName: null }, tags: ['example'] };
    expect(mergePatch(target, patch)).toEqual({
      title: 'Hello!',
      author: { givenName: 'John' },
      tags: ['example'],
      content: 'This will be unchanged',
      phoneNumber: '+01-123-456-7890',
    });
  });

  it('treats a primitive or absent target as {} when the patch is an object', () => {
    expect(mergePatch('text', { a: 1 })).toEqual({ a: 1 });
    expect(mergePatch(undefined, { a: { b: null, c: 2 } })).toEqual({ a: { c: 2 } });
  });

  it('mutates neither input and shares no objects with them', () => {
    const target = { keep: { deep: [1, { x: 1 }] }, change: { y: 1 }, gone: 1 };
    const patch = { change: { z: [2] }, gone: null, added: { w: [3] } };
    const targetCopy = structuredClone(target);
    const patchCopy = structuredClone(patch);
    const result = mergePatch(target, patch) as Record<string, any>;
    expect(target).toEqual(targetCopy);
    expect(patch).toEqual(patchCopy);
    expect(result['keep']).not.toBe(target.keep);
    expect(result['keep'].deep).not.toBe(target.keep.deep);
    expect(result['change'].z).not.toBe(patch.change.z);
    expect(result['added']).not.toBe(patch.added);
    result['keep'].deep[1].x = 99;
    expect(target.keep.deep[1]).toEqual({ x: 1 });
  });

  it('keeps a "__proto__" key as data and never touches prototypes', () => {
    const patch = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as unknown;
    const result = mergePatch({}, patch) as Record<string, unknown>;
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(Object.hasOwn(result, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(JSON.stringify(result)).toBe('{"__proto__":{"polluted":true},"a":1}');
  });
});
