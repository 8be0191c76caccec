import { expect, it } from 'vitest';
import { main as idempotentRetries } from '../../examples/idempotent-retries.js';
import { main as keyRotation } from '../../examples/key-rotation.js';
import { main as quickStart } from '../../examples/quick-start.js';
import { main as testing } from '../../examples/testing-with-a-test-vault.js';
import { describeEachStore } from '../support/stores.js';

const quiet = () => {};

describeEachStore('examples', (store) => {
  it('quick-start: reveal, mask, dedupe, search, list', async () => {
    const result = await quickStart(quiet);
    expect(result.revealed.data).toEqual({ number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' });
    expect(result.masked.data).toEqual({ number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 });
    expect(result.deduplicated).toBe(true);
    expect(result.found).toBe(1);
    expect(result.listed).toBe(1);
  });

  it('testing-with-a-test-vault: cvc lifetime, expiry and sweep under a manual clock', async () => {
    const result = await testing(quiet, store.factory());
    expect(result.fresh).toEqual({ number: '4242424242424242', cvc: '123' });
    expect(result.afterAnHour).toEqual({ number: '4242424242424242' });
    expect(result.expired).toBe('NotFoundError');
    expect(result.swept).toEqual({
      expired: 1,
      cvcRemoved: 0,
      cvcUnreadable: 0,
      idempotencyKeysRemoved: 0,
      reactorResultsRemoved: 0,
      sessionsRemoved: 0,
      tokenIntentsRemoved: 0,
      deliveriesRemoved: 0,
      auditEntriesRemoved: 0,
    });
  });

  it('key-rotation: new key version and re-encryption with progress', async () => {
    const result = await keyRotation(quiet, store.factory());
    expect(result).toEqual({ version: 2, moved: 250, progress: ['100/250', '200/250', '250/250'] });
  });

  it('idempotent-retries: a retried call replays the first token instead of making another', async () => {
    expect(await idempotentRetries(quiet, store.factory())).toEqual({ sameToken: true, replayed: true, tokens: 1 });
  });
});
