import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JobRecord, Store } from '../storage/store.js';

/*
 * Store conformance for background jobs (Store, "background jobs"): the claim/lease guarantees the
 * job queue relies on. Registered by runStoreConformance.
 */

const T0 = Date.UTC(2030, 0, 1);
const LEASE = 60_000;
const HOUR = 60 * 60 * 1000;
/** The kinds the claims in these cases have handlers for. */
const KINDS = ['test'];
let counter = 0;

/** A due job with overrides. */
export function makeJob(overrides: Partial<JobRecord> = {}): JobRecord {
  return {
    id: `job-${++counter}`,
    tenantId: null,
    kind: 'test',
    key: null,
    payload: '{}',
    runAt: T0,
    attempts: 0,
    maxAttempts: 10,
    leaseOwner: null,
    leaseExpiresAt: null,
    createdAt: T0,
    lastError: null,
    ...overrides,
  };
}

export function runJobConformance(name: string, factory: () => Store | Promise<Store>, cleanup?: (store: Store) => void | Promise<void>): void {
  describe(`Store conformance, jobs: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await factory();
      await store.migrate();
    });
    afterEach(async () => {
      if (cleanup) await cleanup(store);
      else await store.close();
    });

    it('claims due jobs only, earliest first, with a lease and a counted attempt', async () => {
      const late = makeJob({ runAt: T0 + 10 });
      const early = makeJob({ runAt: T0 - 10 });
      const future = makeJob({ runAt: T0 + 1000 });
      for (const job of [late, early, future]) expect(await store.enqueueJob(job)).toBe(true);
      const claimed = await store.claimJobs('w1', T0 + 10, LEASE, 10, KINDS);
      expect(claimed.map((j) => j.id)).toEqual([early.id, late.id]);
      expect(claimed[0]).toMatchObject({ leaseOwner: 'w1', leaseExpiresAt: T0 + 10 + LEASE, attempts: 1, payload: '{}' });
      expect(await store.countDueJobs(T0 + 10)).toBe(0);
      expect(await store.countDueJobs(T0 + 1000)).toBe(1);
    });

    it('a job with a key is stored once while it exists; after it finished the key is free', async () => {
      expect(await store.enqueueJob(makeJob({ key: 'sweep' }))).toBe(true);
      expect(await store.enqueueJob(makeJob({ key: 'sweep' }))).toBe(false);
      const [job] = await store.claimJobs('w1', T0, LEASE, 10, KINDS);
      expect(await store.finishJob(job!.id, 'w1')).toBe(true);
      expect(await store.enqueueJob(makeJob({ key: 'sweep' }))).toBe(true);
    });

    it('a leased job is not claimed again until its lease runs out; then another worker takes it', async () => {
      await store.enqueueJob(makeJob());
      const [first] = await store.claimJobs('w1', T0, LEASE, 10, KINDS);
      expect(await store.claimJobs('w2', T0 + LEASE - 1, LEASE, 10, KINDS)).toEqual([]);
      const [again] = await store.claimJobs('w2', T0 + LEASE, LEASE, 10, KINDS);
      expect(again).toMatchObject({ id: first!.id, leaseOwner: 'w2', attempts: 2 });
      // The first worker lost it: its finish, renew and reschedule change nothing.
      expect(await store.finishJob(first!.id, 'w1')).toBe(false);
      expect(await store.renewJobLease(first!.id, 'w1', T0 + 10 * LEASE)).toBe(false);
      expect(await store.rescheduleJob(first!.id, 'w1', T0, 'x', 'keep')).toBe(false);
      expect(await store.claimJobs('w3', T0 + LEASE + 1, LEASE, 10, KINDS)).toEqual([]);
    });

    it('renewing moves the lease; rescheduling releases the job, due at the new time, with the error', async () => {
      await store.enqueueJob(makeJob());
      const [job] = await store.claimJobs('w1', T0, LEASE, 10, KINDS);
      expect(await store.renewJobLease(job!.id, 'w1', T0 + 5 * LEASE)).toBe(true);
      expect(await store.claimJobs('w2', T0 + 2 * LEASE, LEASE, 10, KINDS)).toEqual([]);
      expect(await store.rescheduleJob(job!.id, 'w1', T0 + 100, 'timeout', 'keep')).toBe(true);
      expect(await store.claimJobs('w2', T0 + 99, LEASE, 10, KINDS)).toEqual([]);
      const [next] = await store.claimJobs('w2', T0 + 100, LEASE, 10, KINDS);
      expect(next).toMatchObject({ id: job!.id, attempts: 2, lastError: 'timeout', leaseOwner: 'w2' });
      expect(await store.finishJob(job!.id, 'w2')).toBe(true);
      expect(await store.countDueJobs(T0 + LEASE * 100)).toBe(0);
    });

    it('race: concurrent claimers never get the same job, and together get every one', async () => {
      const jobs = Array.from({ length: 30 }, () => makeJob());
      for (const job of jobs) await store.enqueueJob(job);
      const claims = await Promise.all(Array.from({ length: 12 }, (_, i) => Promise.resolve().then(() => store.claimJobs(`w${i}`, T0, LEASE, 4, KINDS))));
      const ids = claims.flat().map((j) => j.id);
      expect(new Set(ids).size).toBe(ids.length);
      const rest = await store.claimJobs('late', T0, LEASE, 100, KINDS);
      expect(new Set([...ids, ...rest.map((j) => j.id)])).toEqual(new Set(jobs.map((j) => j.id)));
    });

    it('a recurring job rescheduled after a successful run counts its attempts from 0 again; a retry keeps them', async () => {
      await store.enqueueJob(makeJob({ key: 'sweep', maxAttempts: 3 }));
      let job: JobRecord | undefined;
      let now = T0;
      for (let run = 0; run < 5; run++) {
        [job] = await store.claimJobs('w1', now, LEASE, 10, KINDS);
        expect(job).toMatchObject({ attempts: 1, maxAttempts: 3 });
        now += 10;
        expect(await store.rescheduleJob(job!.id, 'w1', now, null, 'reset')).toBe(true);
      }
      [job] = await store.claimJobs('w1', now, LEASE, 10, KINDS);
      expect(await store.rescheduleJob(job!.id, 'w1', now, 'E', 'keep')).toBe(true);
      [job] = await store.claimJobs('w1', now, LEASE, 10, KINDS);
      expect(job).toMatchObject({ attempts: 2, lastError: 'E' });
      expect(await store.rescheduleJob(job!.id, 'w1', now, null, 'reset')).toBe(true);
      [job] = await store.claimJobs('w1', now, LEASE, 10, KINDS);
      expect(job).toMatchObject({ attempts: 1, lastError: null, maxAttempts: 3 });
    });

    it('claims take only the kinds asked for; other kinds stay unleased for a claimer that knows them', async () => {
      const known = makeJob({ kind: 'known' });
      const unknown = makeJob({ kind: 'other', runAt: T0 - 10 });
      await store.enqueueJob(known);
      await store.enqueueJob(unknown);
      expect((await store.claimJobs('w1', T0, LEASE, 10, ['known'])).map((j) => j.id)).toEqual([known.id]);
      expect(await store.claimJobs('w1', T0, LEASE, 10, ['known'])).toEqual([]);
      expect(await store.claimJobs('w1', T0, LEASE, 10, [])).toEqual([]);
      expect(await store.countDueJobs(T0)).toBe(1);
      const [other] = await store.claimJobs('w2', T0, LEASE, 10, ['other', 'known']);
      expect(other).toMatchObject({ id: unknown.id, attempts: 1, leaseOwner: 'w2' });
    });

    it('scheduleJob inserts a keyed job, or makes the stored one due no later than the given time (a clock stepped back)', async () => {
      await store.scheduleJob(makeJob({ key: 'sweep.cvc', runAt: T0 + 2 * HOUR }));
      expect(await store.countDueJobs(T0 + 2 * HOUR)).toBe(1);
      // The clock went back two hours: scheduled again one interval from the new now, it is due then.
      await store.scheduleJob(makeJob({ key: 'sweep.cvc', runAt: T0 + 60_000 }));
      expect(await store.countDueJobs(T0 + 60_000 - 1)).toBe(0);
      expect(await store.countDueJobs(T0 + 60_000)).toBe(1);
      // A later time never postpones it.
      await store.scheduleJob(makeJob({ key: 'sweep.cvc', runAt: T0 + 3 * HOUR }));
      const [job] = await store.claimJobs('w1', T0 + 60_000, LEASE, 10, KINDS);
      expect(job).toMatchObject({ key: 'sweep.cvc', runAt: T0 + 60_000, attempts: 1, leaseOwner: 'w1' });
      // A leased job keeps its lease and attempts; only its runAt can move earlier.
      await store.scheduleJob(makeJob({ key: 'sweep.cvc', runAt: T0 }));
      expect(await store.claimJobs('w2', T0 + 60_000, LEASE, 10, KINDS)).toEqual([]);
      expect(await store.rescheduleJob(job!.id, 'w1', T0 + 120_000, null, 'reset')).toBe(true);
      expect(await store.countDueJobs(T0 + 120_000)).toBe(1);
      expect(await store.countDueJobs(T0 + 120_000 - 1)).toBe(0);
    });

    it('race: concurrent scheduleJob calls of one key store one job, due at the earliest time given', async () => {
      await Promise.all([5, 3, 9, 4].map((n) => Promise.resolve().then(() => store.scheduleJob(makeJob({ key: 'sweep.expiry', runAt: T0 + n * 1000 })))));
      expect(await store.countDueJobs(T0 + 10_000)).toBe(1);
      expect(await store.countDueJobs(T0 + 3000 - 1)).toBe(0);
      expect(await store.countDueJobs(T0 + 3000)).toBe(1);
    });

    it('limit must be a whole number of at least 1', async () => {
      await expect(store.claimJobs('w1', T0, LEASE, 0, KINDS)).rejects.toThrow(/limit/);
    });
  });
}
