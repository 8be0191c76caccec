/**
 * A test vault's clock starts at the real time (docs/embedding.md, Testing): application code that
 * computes expiries from `Date.now()` works against it, and an expiry it refuses names the vault's
 * time, which a test may have moved.
 */
import { expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('the test vault clock', (store) => {
  it('starts at the real time; expiries from Date.now() are accepted; a refused one names the vault time', async () => {
    const before = Date.now();
    const vault = await store.vault({ start: undefined });
    expect(vault.clock.now()).toBeGreaterThanOrEqual(before);
    expect(vault.clock.now()).toBeLessThanOrEqual(Date.now());
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const token = await vault.tokens.create(app, { type: 'token', data: 'secret', expires_at: new Date(Date.now() + 3_600_000).toISOString() });
    expect(token.expires_at).toEqual(expect.any(String));
    expect((await vault.tokens.list(app, {})).data).toHaveLength(1);

    vault.clock.set('2031-06-01T12:00:00Z');
    const error = await vault.tokens.create(app, { type: 'token', data: 'secret', expires_at: new Date(Date.now() + 3_600_000).toISOString() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).errors).toEqual({ expires_at: ["must be in the future (the vault's clock reads 2031-06-01T12:00:00.000+00:00)"] });
  });
});
