import { expect, it } from 'vitest';
import { ConflictError } from '../../src/errors/errors.js';
import { describeEachStore } from '../support/stores.js';

/** A bulk tokenize is one atomic store operation. */
describeEachStore('tokenize is atomic', (store) => {
  const permissions = ['token:create', 'token:read'] as const;

  it('a repeated id (409) stores none of the call’s tokens', async () => {
    const vault = await store.vault();
    const app = await vault.caller({ permissions: [...permissions] });
    const body = { a: { type: 'token', id: 'bulk-1', data: 'one' }, b: { type: 'token', id: 'bulk-2', data: 'two' }, c: { type: 'token', id: 'bulk-1', data: 'again' } };
    await expect(vault.tokens.tokenize(app, body)).rejects.toBeInstanceOf(ConflictError);
    const listed = await vault.tokens.list(app, {});
    expect(listed.data).toEqual([]);
  });

  it('an id taken by an existing token stores none of the others', async () => {
    const vault = await store.vault();
    const app = await vault.caller({ permissions: [...permissions] });
    await vault.tokens.create(app, { type: 'token', id: 'taken', data: 'first' });
    await expect(
      vault.tokens.tokenize(app, [
        { type: 'token', data: 'new' },
        { type: 'token', id: 'taken', data: 'x' },
      ]),
    ).rejects.toThrow(/'taken' already exists/);
    expect((await vault.tokens.list(app, {})).data.map((t) => t.id)).toEqual(['taken']);
  });

  it('stores every item, deduplicating within the call, in one operation', async () => {
    const vault = await store.vault();
    // Deduplication matches only tokens the caller may reveal.
    const app = await vault.caller({ permissions: [...permissions], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: [...permissions] }] });
    const out = (await vault.tokens.tokenize(app, [
      { type: 'token', data: 'same', deduplicate_token: true },
      { type: 'token', data: 'same', deduplicate_token: true },
      { type: 'token', data: 'other' },
    ])) as { id: string }[];
    expect(out[0]!.id).toBe(out[1]!.id);
    expect(out[2]!.id).not.toBe(out[0]!.id);
    expect((await vault.tokens.list(app, {})).data).toHaveLength(2);
  });
});
