import { expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { describeEachStore } from '../support/stores.js';

/**
 * Both stores accept and refuse the same input. A NUL character (U+0000) in a
 * string the vault stores as text is a 400 naming the field on both; token data (encrypted) may hold it.
 */
describeEachStore('NUL characters', (store) => {
  const fieldOf = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ValidationError);
    return Object.keys((error as ValidationError).errors);
  };

  it('are refused in every stored text field with a 400 naming it, and nothing is written', async () => {
    const vault = await store.vault();
    const all = ['token:create', 'token:read', 'token:search', 'token:update', 'token:delete'] as const;
    const app = await vault.caller({ permissions: [...all] });
    const admin = await vault.authenticate(vault.adminKey);
    expect(await fieldOf(vault.tokens.create(app, { type: 'token', data: 'x', metadata: { k: 'a\u0000b' } }))).toEqual(['metadata.k']);
    expect(await fieldOf(vault.tokens.create(app, { type: 'token', data: 'x', id: 'a\u0000b' }))).toEqual(['id']);
    expect(await fieldOf(vault.tokens.create(app, { type: 'token', data: 'x', search_indexes: ['{{ data }}\u0000'] }))).toEqual(['search_indexes[0]']);
    expect(await fieldOf(vault.tokens.tokenize(app, { card: { type: 'token', data: 'x', metadata: { ['k\u0000']: 'v' } } }))).toEqual(['card.metadata']);
    expect(await fieldOf(vault.tokens.get(app, 'a\u0000'))).toEqual(['id']);
    expect(await fieldOf(vault.tokens.delete(app, 'a\u0000'))).toEqual(['id']);
    expect(await fieldOf(vault.tokens.list(app, { metadata: { k: '\u0000' } }))).toEqual(['metadata.k']);
    expect(await fieldOf(vault.tokens.search(app, { query: 'metadata.k:\u0000' }))).toEqual(['query']);
    const token = await vault.tokens.create(app, { type: 'token', data: 'x' });
    expect(await fieldOf(vault.tokens.update(app, token.id, { metadata: { k: '\u0000' } }))).toEqual(['metadata.k']);
    expect(await fieldOf(vault.applications.create(admin, { name: 'a\u0000', type: 'private', permissions: ['token:read'] }))).toEqual(['name']);
    expect(await fieldOf(vault.formulas.create(admin, { name: 'f', code: 'module.exports = async () => ({ raw: "\u0000" })' }))).toEqual(['code']);
    expect(await fieldOf(vault.createTenant({ name: 'acme\u0000' }))).toEqual(['name']);
    expect((await vault.tokens.list(app, {})).data.map((t) => t.id)).toEqual([token.id]);
    expect((await vault.tokens.get(app, token.id)).metadata).toEqual({});
  });

  it('are accepted in token data, which is stored encrypted', async () => {
    const vault = await store.vault();
    const app = await vault.caller({
      permissions: ['token:create', 'token:read'],
      rules: [{ description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
    });
    const token = await vault.tokens.create(app, { type: 'token', data: { note: 'a\u0000b' } });
    expect((await vault.tokens.get(app, token.id)).data).toEqual({ note: 'a\u0000b' });
  });

  it('lone surrogates are refused the same way (PostgreSQL would store U+FFFD: two keys or ids would become one), paired ones pass, token data may hold them', async () => {
    const vault = await store.vault();
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const refused = async (promise: Promise<unknown>) => {
      const error = await promise.then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ValidationError);
      return (error as ValidationError).errors;
    };
    expect(await refused(vault.tokens.create(app, { type: 'token', data: 'x', metadata: { k: 'a\ud800' } }))).toEqual({ 'metadata.k': [expect.stringContaining('surrogate')] });
    expect(Object.keys(await refused(vault.tokens.create(app, { type: 'token', data: 'x', id: 'id-\udc00' })))).toEqual(['id']);
    expect(Object.keys(await refused(vault.tokens.create(app, { type: 'token', data: 'x', metadata: { ['k\udbff']: 'v' } })))).toEqual(['metadata']);
    expect(Object.keys(await refused(vault.idempotency.run(app, { key: 'k\ud800', fingerprint: 'f' }, async () => 1)))).toEqual(['key']);
    const emoji = await vault.tokens.create(app, { type: 'token', data: 'lone \ud800 in data', id: 'id-\ud83d\ude00', metadata: { k: '\ud83d\ude00' } });
    expect((await vault.tokens.get(app, emoji.id)).metadata).toEqual({ k: '\ud83d\ude00' });
    expect((await vault.tokens.list(app, {})).data.map((t) => t.id)).toEqual(['id-\ud83d\ude00']);
  });
});
