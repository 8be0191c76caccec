import type { JobQueue } from './job-queue.js';
import { SWEEP_CONCERNS, type Sweeper } from './sweeper.js';

/** The job kind of a sweep concern (one stored job each, keyed by its kind). */
export const sweepJobKind = (concern: (typeof SWEEP_CONCERNS)[number]) => `sweep.${concern}`;

/**
 * Registers each sweep concern as its own recurring job, due `intervalMs` after each run; a run
 * that fails is retried with backoff capped at the interval and never dropped (JobQueue
 * registerRecurring), so a store failing on one concern holds back none of the others.
 * `schedule`: whether this instance stores the jobs (sweepIntervalMs > 0); one that does not still
 * runs them when another instance on the database stored them.
 */
export function registerSweepJobs(jobs: JobQueue, sweeper: Sweeper, options: { intervalMs: number; schedule: boolean }): void {
  for (const concern of SWEEP_CONCERNS) {
    jobs.registerRecurring(
      sweepJobKind(concern),
      async () => {
        await sweeper.run(concern);
      },
      options,
    );
  }
  // Before each concern had its own job one 'sweep' job did them all: a row an earlier version left
  // is removed when it comes due (the concerns' jobs do its work).
  jobs.register('sweep', async () => ({ status: 'done' }));
}
