/**
 * An idempotent request leaves Node's async hooks off once answered: the run's dependencies are
 * tracked in an AsyncLocalStorage, and while one is on every promise of every later request pays
 * for its hook (docs/performance.md, "Against the floor"). Its own file: whatever switches them on
 * for good in a process would hide the rule from the tests after it.
 */
import { executionAsyncId } from 'node:async_hooks';
import { beforeEach, expect, it } from 'vitest';
import { type Harness, harness } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

/** The async id a promise continuation runs under: 0 unless promise hooks are on. */
async function continuationId(): Promise<number> {
  await null;
  return executionAsyncId();
}

describeEachStore('idempotency and async hooks', (store) => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness({}, store);
  });

  it('answered idempotent requests, one or several at once, leave no async hook on', async () => {
    expect(await continuationId()).toBe(0);
    const create = (key: string) => h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'secret-value' }, headers: { 'SVC-IDEMPOTENCY-KEY': key } });
    expect((await create('k-1')).status).toBe(201);
    expect(await continuationId()).toBe(0);
    const statuses = (await Promise.all(['k-2', 'k-3', 'k-1'].map(create))).map((r) => r.status);
    expect(statuses).toEqual([201, 201, 201]);
    expect(await continuationId()).toBe(0);
  });
});
