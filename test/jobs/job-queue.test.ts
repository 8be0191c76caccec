import { describe, expect, it } from 'vitest';
import { retryDelayMs } from '../../src/jobs/backoff.js';
import { JobQueue } from '../../src/jobs/job-queue.js';
import { SWEEP_CONCERNS } from '../../src/jobs/sweeper.js';
import { silentLogger } from '../../src/common/logger.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';

describe('retry backoff', () => {
  it('doubles from 1 s up to an hour, with jitter between half and all of it', () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, () => 1))).toEqual([1000, 2000, 4000, 8000]);
    expect(retryDelayMs(1, () => 0)).toBe(500);
    expect(retryDelayMs(40, () => 1)).toBe(3_600_000);
  });
});

describeEachStore('job queue', (store) => {
  it('runs a due job with its payload once and removes it; a job due later waits for its time', async () => {
    const vault = await store.vault();
    const seen: unknown[] = [];
    const jobs = queueOn(vault);
    jobs.register('test.echo', async (payload) => void seen.push(payload));
    await jobs.enqueue({ kind: 'test.echo', tenantId: vault.tenantId, payload: { n: 1 } });
    await jobs.enqueue({ kind: 'test.echo', tenantId: vault.tenantId, payload: { n: 2 }, runAt: vault.clock.now() + 5000 });
    expect(await jobs.runDue()).toBe(1);
    expect(seen).toEqual([{ n: 1 }]);
    expect(await jobs.runDue()).toBe(0);
    vault.clock.advance(5000);
    expect(await jobs.runDue()).toBe(1);
    expect(seen).toEqual([{ n: 1 }, { n: 2 }]);
    expect(await vault.store.countDueJobs(vault.clock.now() + 1e9)).toBe(0);
  });

  it('a throwing handler is retried with backoff, then dropped after maxAttempts; its message is not stored', async () => {
    const vault = await store.vault();
    const jobs = queueOn(vault);
    let calls = 0;
    jobs.register(
      'test.fail',
      async () => {
        calls++;
        throw new Error('card 4242424242424242 was refused');
      },
      { maxAttempts: 3 },
    );
    await jobs.enqueue({ kind: 'test.fail', tenantId: null, payload: null });
    expect(await jobs.runDue()).toBe(1);
    // Due again between 0.5 and 1 s later (the first backoff step, with jitter).
    expect(await vault.store.countDueJobs(vault.clock.now() + 499)).toBe(0);
    expect(await vault.store.countDueJobs(vault.clock.now() + 1000)).toBe(1);
    vault.clock.advance(1000);
    expect(await jobs.runDue()).toBe(1);
    vault.clock.advance(2000);
    expect(await jobs.runDue()).toBe(1);
    expect(calls).toBe(3);
    vault.clock.advance(3_600_000);
    expect(await jobs.runDue()).toBe(0);
  });

  it('a recurring job reschedules itself; a keyed job is stored once', async () => {
    const vault = await store.vault();
    const jobs = queueOn(vault);
    let runs = 0;
    jobs.register('test.tick', async () => {
      runs++;
      return { status: 'reschedule', runAt: vault.clock.now() + 1000 };
    });
    expect(await jobs.enqueue({ kind: 'test.tick', key: 'tick', tenantId: null, payload: null })).not.toBeNull();
    expect(await jobs.enqueue({ kind: 'test.tick', key: 'tick', tenantId: null, payload: null })).toBeNull();
    await jobs.runDue();
    vault.clock.advance(999);
    await jobs.runDue();
    vault.clock.advance(1);
    await jobs.runDue();
    expect(runs).toBe(2);
  });

  it('a recurring job that failed once after many successful runs is retried, not dropped (the sweep bug)', async () => {
    const vault = await store.vault();
    const jobs = queueOn(vault);
    let runs = 0;
    jobs.register(
      'test.recur',
      async () => {
        runs++;
        if (runs === 8) throw new Error('transient');
        return { status: 'reschedule', runAt: vault.clock.now() + 1000 };
      },
      { maxAttempts: 3 },
    );
    await jobs.enqueue({ kind: 'test.recur', key: 'recur', tenantId: null, payload: null });
    for (let i = 0; i < 10; i++) {
      expect(await jobs.runDue()).toBe(1);
      vault.clock.advance(1000);
    }
    expect(runs).toBe(10);
    expect(await vault.store.countDueJobs(vault.clock.now())).toBe(1);
  });

  it('a job of a kind this queue has no handler for is left unclaimed, for a queue that knows it', async () => {
    const vault = await store.vault();
    const jobs = queueOn(vault);
    jobs.register('test.known', async () => undefined);
    await jobs.enqueue({ kind: 'test.elsewhere', tenantId: null, payload: null });
    expect(await jobs.runDue()).toBe(0);
    const other = queueOn(vault);
    let ran = 0;
    other.register('test.elsewhere', async () => void ran++);
    expect(await other.runDue()).toBe(1);
    expect(ran).toBe(1);
  });

  it('jobs a run enqueues run in the same runDue when due', async () => {
    const vault = await store.vault();
    const jobs = queueOn(vault);
    const order: string[] = [];
    jobs.register('test.second', async () => void order.push('second'));
    jobs.register('test.first', async () => {
      order.push('first');
      await jobs.enqueue({ kind: 'test.second', tenantId: null, payload: null });
    });
    await jobs.enqueue({ kind: 'test.first', tenantId: null, payload: null });
    expect(await jobs.runDue()).toBe(2);
    expect(order).toEqual(['first', 'second']);
  });

  it('stopping releases a running job at once (grace 0); another worker then takes it', async () => {
    const vault = await store.vault();
    const jobs = queueOn(vault);
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    jobs.register('test.slow', (_payload, ctx) => {
      started();
      return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))));
    });
    await jobs.enqueue({ kind: 'test.slow', tenantId: null, payload: null });
    const run = jobs.runDue();
    await running;
    await jobs.stop();
    await run;
    const [released] = await vault.store.claimJobs('other', vault.clock.now(), 60_000, 10, ['test.slow']);
    expect(released).toMatchObject({ kind: 'test.slow', lastError: 'released at shutdown', attempts: 2 });
  });

  it('a started worker runs a job enqueued on this vault without being polled', async () => {
    const vault = await store.vault();
    const jobs = queueOn(vault, 60_000);
    let done!: (payload: unknown) => void;
    const ran = new Promise((resolve) => (done = resolve));
    jobs.register('test.now', async (payload) => done(payload));
    jobs.start();
    // Let the start-up poll (which finds nothing) pass, so only the enqueue's wake-up can run it.
    await jobs.runDue();
    await jobs.enqueue({ kind: 'test.now', tenantId: null, payload: 'hello' });
    expect(await ran).toBe('hello');
    await jobs.stop();
  });

  it('the sweep is a recurring job per concern: an expired token is removed when it comes due', async () => {
    const vault = await store.vault({ sweepIntervalMs: 60_000 });
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const token = await vault.tokens.create(app, { type: 'token', data: 'x', expires_at: new Date(vault.clock.now() + 30_000).toISOString() });
    vault.clock.advance(59_999);
    await vault.worker.runDue();
    expect(await vault.store.getDeletedToken(vault.tenantId, token.id)).toBeNull();
    vault.clock.advance(1);
    expect(await vault.worker.runDue()).toBe(SWEEP_CONCERNS.length);
    expect(await vault.store.getDeletedToken(vault.tenantId, token.id)).toMatchObject({ deletedBy: 'system:expiry' });
    vault.clock.advance(60_000);
    expect(await vault.worker.runDue()).toBe(SWEEP_CONCERNS.length);
  });
});

/** A queue on the test vault's store and clock (tests register their own kinds on it). */
function queueOn(vault: TestVault, pollIntervalMs = 1000): JobQueue {
  return new JobQueue({ store: vault.store, clock: vault.clock, logger: silentLogger, concurrency: 4, pollIntervalMs, shutdownGraceMs: 0 });
}
