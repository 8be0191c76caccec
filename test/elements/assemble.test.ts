import { describe, expect, it } from 'vitest';
import { assemble } from '../../src/elements/browser/assemble.js';
import type { ElementRef } from '../../src/elements/protocol.js';

/*
 * Where a frame fills element references (src/elements/browser/assemble.ts, docs/elements.md):
 * only in a token's data at exact paths; anywhere else, and beside fields that derive from or show
 * the data, the request is refused before any value is read.
 */
const NUMBER = '4242424242424242';
const number = (): ElementRef => ({ $tvElement: 'n' }) as ElementRef;

function run(path: '/tokens' | '/tokenize', body: unknown): Promise<{ value?: unknown; code?: string; read: string[] }> {
  const read: string[] = [];
  const resolve = async (ref: ElementRef) => (read.push(String(ref.$tvElement)), NUMBER);
  return assemble(path, body, resolve).then(
    (value) => ({ value, read }),
    (error: { code: string }) => ({ code: error.code, read }),
  );
}

describe('Elements: assembling a request in the frame', () => {
  it("fills references under a create body's data, at any depth inside it, and nowhere else", async () => {
    expect(await run('/tokens', { type: 'card', data: { number: number(), nested: [{ n: number() }] }, metadata: { order: '1' } })).toEqual({
      value: { type: 'card', data: { number: NUMBER, nested: [{ n: NUMBER }] }, metadata: { order: '1' } },
      read: ['n', 'n'],
    });
    expect((await run('/tokens', { type: 'token', data: number() })).value).toEqual({ type: 'token', data: NUMBER });
    // A key named `data` elsewhere is not the token's data (the red-team case: metadata.data).
    for (const body of [
      { type: 'token', data: 'x', metadata: { data: number() } },
      { type: 'token', data: 'x', metadata: { leak: number() } },
      { type: 'token', data: 'x', containers: [number()] },
      { type: 'token', data: 'x', metadata: { data: { data: number() } } },
      number(),
      [{ type: 'token', data: number() }],
    ]) {
      expect(await run('/tokens', body)).toEqual({ code: 'element_outside_data', read: [] });
    }
  });

  it("in a tokenize body, fills each create body's data and refuses references outside them (the answer echoes the rest)", async () => {
    const filled = await run('/tokenize', { a: { type: 'card', data: { number: number() } }, list: [{ type: 'token', data: number() }], note: 'kept' });
    expect(filled).toEqual({ value: { a: { type: 'card', data: { number: NUMBER } }, list: [{ type: 'token', data: NUMBER }], note: 'kept' }, read: ['n', 'n'] });
    for (const body of [
      { a: { type: 'token', data: 'x', metadata: { data: number() } } },
      { a: { type: 'token', data: 'x' }, echoed: number() },
      { echoed: { data: number() } },
      { a: { type: 7, data: number() } },
      { a: { type: 'token', data: 'x' }, b: { type: 'token', data: 'y', metadata: { data: { type: 'token', data: number() } } } },
    ]) {
      expect((await run('/tokenize', body)).code).toBe('element_outside_data');
    }
  });

  it('refuses a create body with references that sets id, mask, fingerprint_expression or search_indexes; allows them without references', async () => {
    const derived = {
      id: '{{ data | alias_preserve_length: 0, 4 }}',
      mask: '{{ data | slice: 0, 8 }}',
      fingerprint_expression: '{{ data | slice: 0, 8 }}',
      search_indexes: ['{{ data }}'],
    };
    for (const [field, value] of Object.entries(derived)) {
      expect(await run('/tokens', { type: 'token', data: number(), [field]: value })).toEqual({ code: 'unsupported_field', read: [] });
      expect((await run('/tokenize', { a: { type: 'token', data: { n: number() }, [field]: value } })).code).toBe('unsupported_field');
      expect((await run('/tokens', { type: 'token', data: 'typed by the page', [field]: value })).value).toEqual({ type: 'token', data: 'typed by the page', [field]: value });
    }
    // null means the default, as the API reads it.
    expect((await run('/tokens', { type: 'token', data: number(), mask: null, id: null })).value).toEqual({ type: 'token', data: NUMBER, mask: null, id: null });
    // In a tokenize body, another create body without references may choose its own.
    expect((await run('/tokenize', { a: { type: 'token', data: number() }, b: { type: 'token', data: 'y', mask: '{{ data }}' } })).value).toEqual({
      a: { type: 'token', data: NUMBER },
      b: { type: 'token', data: 'y', mask: '{{ data }}' },
    });
  });
});
