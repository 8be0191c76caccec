import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JobQueue } from '../../src/jobs/job-queue.js';
import type { Logger } from '../../src/common/logger.js';
import type { Store } from '../../src/storage/store.js';
import { createTestVault } from '../../src/testing/index.js';
import { closeAll } from '../../src/vault/close-all.js';
import { faultyStore, watchUnhandledRejections } from '../support/faulty-store.js';
import { describeEachStore, type TestStore } from '../support/stores.js';
import { SUITE_START } from '../support/suite-start.js';

/** A logger that keeps its entries (fields included) for the test to read. */
function recordingLogger() {
  const entries: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at =
    (level: string) =>
    (message: string, fields: Record<string, unknown> = {}) =>
      void entries.push({ level, message, fields });
  const logger: Logger = { info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, entries };
}

describe('closing the vault', () => {
  it('runs every closer even when one fails, then reports each failure together', async () => {
    const ran: string[] = [];
    const first = new Error('jobs refused');
    const last = new Error('store refused');
    const closing = closeAll([
      ['jobs', () => Promise.reject(first)],
      ['proxy', () => void ran.push('proxy')],
      ['audit', async () => void ran.push('audit')],
      [
        'store',
        () => {
          ran.push('store');
          throw last;
        },
      ],
    ]);
    const error = (await closing.catch((e: unknown) => e)) as AggregateError;
    expect(error).toBeInstanceOf(AggregateError);
    expect(error.errors).toEqual([first, last]);
    expect(error.message).toBe('closing the vault failed: jobs, store');
    expect(ran).toEqual(['proxy', 'audit', 'store']);
  });
});

describeEachStore('job outcomes the store refuses', (kind) => {
  let unhandled: ReturnType<typeof watchUnhandledRejections>;
  beforeEach(() => {
    unhandled = watchUnhandledRejections();
  });
  afterEach(() => unhandled.stop());

  /** A test vault on a fresh store of this kind wrapped by faultyStore; closed and cleaned up by the test. */
  async function faultyVault(kind: TestStore, methods: Parameters<typeof faultyStore>[1], options: Parameters<typeof createTestVault>[0] = {}) {
    const real = kind.create();
    const faults = faultyStore(real, methods);
    faults.fail(false);
    const vault = await createTestVault({ start: SUITE_START, ...options, store: faults.store });
    return { vault, faults, real, cleanup: () => kind.cleanup(real) };
  }

  it('a rejected reschedule on a started queue is no unhandled rejection: it is logged, retried, and recorded once the store recovers', async () => {
    const { vault, faults, real, cleanup } = await faultyVault(kind, ['rescheduleJob']);
    const { logger, entries } = recordingLogger();
    const jobs = new JobQueue({ store: faults.store, clock: vault.clock, logger, concurrency: 2, pollIntervalMs: 3_600_000, shutdownGraceMs: 0 });
    let runs = 0;
    jobs.registerRecurring('test.recurring', async () => void runs++, { intervalMs: 60_000 });
    await jobs.scheduleRecurring();
    vault.clock.advance(60_000);
    faults.fail(true);
    const refused = faults.nextRejection();
    jobs.start();
    await refused;
    expect(await unhandled.check()).toEqual([]);
    expect(entries).toContainEqual({
      level: 'warn',
      message: 'job queue: the store did not record a job outcome; it is retried',
      fields: expect.objectContaining({ kind: 'test.recurring', outcome: 'reschedule', failures: 1, error: 'service_unavailable' }),
    });
    // Still refused at the first retry (one backoff step later): kept, with a longer wait.
    vault.clock.advance(1_000);
    await jobs.runDue();
    expect(faults.rejected).toBe(2);
    faults.fail(false);
    vault.clock.advance(2_000);
    expect(await jobs.runDue()).toBe(0);
    expect(runs).toBe(1);
    expect(entries.map((e) => e.message)).toContain('job queue: a job outcome was recorded after a retry');
    // The outcome is the run's: released, due one interval after it, attempts counted from 0 again.
    const [job] = await real.claimJobs('other', vault.clock.now() + 60_000, 60_000, 10, ['test.recurring']);
    expect(job).toMatchObject({ kind: 'test.recurring', attempts: 1, lastError: null });
    expect(job!.runAt).toBeLessThanOrEqual(vault.clock.now() + 60_000);
    await jobs.stop();
    expect(await unhandled.check()).toEqual([]);
    await vault.close();
    await cleanup();
  });

  it('stop() finishes when releasing a running job is refused; the job is left to its lease', async () => {
    const { vault, faults, real, cleanup } = await faultyVault(kind, ['rescheduleJob']);
    const { logger, entries } = recordingLogger();
    const jobs = new JobQueue({ store: faults.store, clock: vault.clock, logger, concurrency: 2, pollIntervalMs: 3_600_000, shutdownGraceMs: 0 });
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    jobs.register('test.slow', (_payload, ctx) => {
      started();
      return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))));
    });
    await jobs.enqueue({ kind: 'test.slow', tenantId: null, payload: null });
    faults.fail(true);
    const run = jobs.runDue();
    await running;
    await expect(jobs.stop()).resolves.toBeUndefined();
    await expect(run).resolves.toBe(1);
    expect(entries.map((e) => e.message)).toContain('job queue: a job outcome was not recorded before the queue stopped; the job runs again when its lease ends');
    // Still leased to the stopped queue: another worker takes it when the lease runs out.
    expect(await real.claimJobs('other', vault.clock.now(), 60_000, 10, ['test.slow'])).toEqual([]);
    expect(await real.claimJobs('other', vault.clock.now() + 60_000, 60_000, 10, ['test.slow'])).toHaveLength(1);
    expect(await unhandled.check()).toEqual([]);
    await vault.close();
    await cleanup();
  });

  it('vault.close() finishes while the store refuses the sweep jobs\u2019 outcomes on a started worker', async () => {
    const { vault, faults, real, cleanup } = await faultyVault(kind, ['rescheduleJob'], { sweepIntervalMs: 60_000, logger: recordingLogger().logger });
    vault.clock.advance(60_000);
    faults.fail(true);
    const refused = faults.nextRejection();
    vault.worker.start();
    await refused;
    await expect(vault.close()).resolves.toBeUndefined();
    expect(await unhandled.check()).toEqual([]);
    // The store was closed too: the vault got past the job worker.
    await expect(real.getTenant(vault.tenantId)).rejects.toThrow();
    await cleanup();
  });

  it('vault.close() closes the store and reports a closer that failed', async () => {
    const real = kind.create();
    let closes = 0;
    const store = new Proxy(real, {
      get(target, property) {
        if (property === 'close') {
          return async () => {
            closes++;
            await target.close();
            throw new Error('the file system refused the last write');
          };
        }
        const value = Reflect.get(target, property) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as Store;
    const vault = await createTestVault({ start: SUITE_START, store });
    const app = await vault.caller({ permissions: ['token:create'] });
    await vault.tokens.create(app, { type: 'token', data: 'x' });
    const error = (await vault.close().catch((e: unknown) => e)) as AggregateError;
    expect(error).toBeInstanceOf(AggregateError);
    expect(error.message).toBe('closing the vault failed: store');
    expect(error.errors.map((e: Error) => e.message)).toEqual(['the file system refused the last write']);
    expect(closes).toBe(1);
    await kind.cleanup(real);
  });
});
