import { describe, expect, it } from 'vitest';
import { AuthorizationError, NotFoundError, ReactorError, ValidationError } from '../../src/errors/errors.js';
import { cutUtf8, describeHostError, flattenApiTree, LogBuffer } from '../../src/sandbox/bridge.js';
import type { HostApiTree } from '../../src/sandbox/sandbox.js';

describe('flattenApiTree', () => {
  it('lists function paths with their parent objects', () => {
    const tokens = { retrieve: async () => 1, create: async () => 2 };
    const tree: HostApiTree = { tokens, tokenize: async () => 3, reactors: { react: async () => 4 } };
    const flat = flattenApiTree(tree);
    expect([...flat.keys()].sort()).toEqual(['reactors.react', 'tokenize', 'tokens.create', 'tokens.retrieve']);
    expect(flat.get('tokens.retrieve')?.parent).toBe(tokens);
  });

  it('skips names that are not identifiers, __proto__, non-functions and inherited members', () => {
    const tree = Object.assign(Object.create({ inherited: async () => 0 }), {
      'a.b': async () => 1,
      ok: async () => 2,
      nested: { 'bad name': async () => 3, fine: async () => 4 },
      value: 5,
    }) as HostApiTree;
    Object.defineProperty(tree, '__proto__', { value: { evil: async () => 6 }, enumerable: true });
    expect([...flattenApiTree(tree).keys()].sort()).toEqual(['nested.fine', 'ok']);
  });

  it('stops at a cycle instead of recursing forever', () => {
    const tree: Record<string, unknown> = { f: async () => 1 };
    tree.self = tree;
    const keys = [...flattenApiTree(tree as HostApiTree).keys()];
    expect(keys).toContain('f');
    expect(keys.length).toBeLessThan(20);
  });
});

describe('describeHostError', () => {
  it('passes vault errors with their status and no stack', () => {
    expect(describeHostError(new NotFoundError('Token', 'x'), 'bt.tokens.retrieve')).toEqual({ name: 'NotFoundError', message: "Token 'x' not found", status: 404 });
    expect(describeHostError(new AuthorizationError(), 'bt.x')).toMatchObject({ name: 'AuthorizationError', status: 403 });
    expect(describeHostError(new ValidationError({ id: ['bad'] }), 'bt.x')).toEqual({
      name: 'ValidationError',
      message: 'Validation failed: id: bad',
      status: 400,
      errors: { id: ['bad'] },
    });
    expect(describeHostError(new ReactorError('RateLimitError', 429, 'slow'), 'bt.x')).toEqual({ name: 'RateLimitError', message: 'slow', status: 429 });
  });

  it('hides anything else behind a generic message', () => {
    expect(describeHostError(new Error('password=hunter2'), 'bt.tokens.create')).toEqual({ name: 'Error', message: 'Internal error in bt.tokens.create', status: 500 });
    expect(describeHostError('string', 'bt.x').message).toBe('Internal error in bt.x');
  });
});

describe('LogBuffer', () => {
  it('prefixes warnings and errors and stops at the byte budget', () => {
    const logs = new LogBuffer(30);
    expect(logs.add('log', 'one')).toBe(true);
    expect(logs.add('warn', 'two')).toBe(true);
    expect(logs.add('error', 'three and more text')).toBe(false);
    expect(logs.add('log', 'dropped')).toBe(false);
    expect(logs.lines).toEqual(['one', '[warn] two', '[error] three and']);
    expect(Buffer.byteLength(logs.lines.join(''))).toBe(30);
    expect(logs.truncated).toBe(true);
  });

  it('with a zero budget keeps nothing', () => {
    const logs = new LogBuffer(0);
    expect(logs.add('log', 'x')).toBe(false);
    expect(logs.lines).toEqual([]);
    expect(logs.truncated).toBe(true);
  });
});

describe('cutUtf8', () => {
  it('never splits a character', () => {
    expect(cutUtf8('a€b', 2)).toBe('a');
    expect(cutUtf8('a€b', 4)).toBe('a€');
    expect(cutUtf8('😀x', 3)).toBe('');
    expect(cutUtf8('short', 10)).toBe('short');
  });
});
