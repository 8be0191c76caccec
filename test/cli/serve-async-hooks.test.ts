/**
 * `tokenvault serve` keeps Node's async hooks off: with them on (any AsyncLocalStorage.run), every
 * promise of every request pays for its hook (docs/performance.md, "Against the floor"). Its own
 * file: once something in a process switches them on, they stay on.
 */
import { executionAsyncId } from 'node:async_hooks';
import { expect, it } from 'vitest';
import { ADMIN_KEY, cli } from './helpers.js';

/** The async id a promise continuation runs under: 0 unless promise hooks are on. */
async function continuationId(): Promise<number> {
  await null;
  return executionAsyncId();
}

it('serving requests switches no async hooks on', async () => {
  expect(await continuationId()).toBe(0);
  const seen: number[] = [];
  const served = await cli(['serve', '--port', '0', '--db', ':memory:'], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY }, async (url) => {
    expect((await fetch(`${url}/applications`, { headers: { 'SVC-API-KEY': ADMIN_KEY } })).status).toBe(200);
    seen.push(await continuationId());
  });
  expect(served.code, served.stderr).toBe(0);
  expect(seen).toEqual([0]);
});
