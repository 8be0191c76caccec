/** The types of the job queue's contract: what a handler gets and reports, and how kinds are registered. */
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { JobRecord, Store } from '../storage/store.js';

/**
 * What a handler reports. `retry`: the attempt failed, try again at `runAt`. `reschedule`: the
 * job succeeded and is due again at `runAt` (recurring work such as the sweep).
 */
export type JobOutcome = { status: 'done' } | { status: 'retry'; runAt: number; error: string } | { status: 'reschedule'; runAt: number };

export interface JobContext {
  job: JobRecord;
  /** Aborted when the queue stops before the handler finished: throw soon; the job is then released, not lost. */
  signal: AbortSignal;
  /** Extends this worker's lease to now + `leaseMs` (default: the kind's lease). */
  renew(leaseMs?: number): Promise<void>;
}

/**
 * Runs one job. Returning nothing means done. A throw is retried with exponential backoff (up to the
 * kind's `maxAttempts`, then dropped with an error log); its message is never logged or stored,
 * only its error code or name, since it may come from code that handled data.
 */
export type JobHandler = (payload: unknown, ctx: JobContext) => Promise<JobOutcome | void>;

export interface EnqueueInput {
  kind: string;
  tenantId: string | null;
  /** JSON-serializable; never token data or secrets in clear (it is stored as is). */
  payload: unknown;
  /** Default: now. */
  runAt?: number;
  /** At most one stored job per key: enqueueing another while one exists does nothing. */
  key?: string;
}

export interface JobQueueOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Jobs one instance runs at once. */
  concurrency: number;
  /** How often a started queue looks for due jobs (ms); jobs enqueued here start at once. */
  pollIntervalMs: number;
  /** How long `stop()` lets running jobs finish before it aborts them and releases their leases (ms). */
  shutdownGraceMs: number;
}

export interface Registration {
  handler: JobHandler;
  leaseMs: number;
  maxAttempts: number;
  /** A recurring kind: one job (keyed by its kind), due again this long after each run. */
  recurring?: { intervalMs: number; schedule: boolean };
}

/** Options of a recurring kind (registerRecurring). */
export interface RecurringOptions {
  /** How long after each run (successful or not) the job is due again, at most (ms). */
  intervalMs: number;
  leaseMs?: number;
  /** Whether scheduleRecurring stores this job (default true); false: only run it when another instance stored it. */
  schedule?: boolean;
}
