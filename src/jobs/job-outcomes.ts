import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { VaultError } from '../errors/errors.js';
import { retryDelayMs } from './backoff.js';

/** What a job's run ended with, as its outcome write records it (and as logs name it). */
export type OutcomeName = 'done' | 'retry' | 'reschedule' | 'released' | 'dropped';

/** The store write that records one job's outcome (finish, reschedule, release). */
export interface OutcomeWrite {
  jobId: string;
  kind: string;
  outcome: OutcomeName;
  /** The store call; its answer (false: the lease was lost meanwhile) needs no retry. */
  write: () => Promise<boolean>;
}

/**
 * Outcome writes are retried well inside a job's lease (60 s by default): past it, another worker
 * may take the job, and its run then stands for this one.
 */
const MAX_RETRY_DELAY_MS = 30_000;

interface Pending {
  entry: OutcomeWrite;
  failures: number;
  dueAt: number;
}

/**
 * Records job outcomes so that no store failure escapes the queue: a write the store rejects (disk
 * full, lost connection, a locked database) is logged as a store condition (the error's code, never
 * its message) and kept, then retried with backoff on the queue's clock each time the queue polls
 * or runs due jobs. An outcome never recorded (the vault stopped first) is not lost work: the job's
 * lease runs out and it is claimed and run again, as after a crash (delivery is at-least-once).
 */
export class JobOutcomes {
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #pending = new Map<string, Pending>();

  constructor(clock: Clock, logger: Logger) {
    this.#clock = clock;
    this.#logger = logger;
  }

  /** Outcome writes waiting for a retry. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Writes an outcome; never rejects (a failed write is kept for retryDue). */
  async record(entry: OutcomeWrite): Promise<void> {
    this.#pending.delete(entry.jobId);
    try {
      await entry.write();
    } catch (error) {
      this.#failed(entry, 1, error);
    }
  }

  /** A new claim of the job by this queue stands for a pending outcome of an earlier run. */
  supersede(jobId: string): void {
    this.#pending.delete(jobId);
  }

  /** Retries the pending writes that are due (all of them with `all`); never rejects. */
  async retryDue(all = false): Promise<void> {
    const now = this.#clock.now();
    for (const [jobId, pending] of [...this.#pending]) {
      if (!all && pending.dueAt > now) continue;
      if (this.#pending.get(jobId) !== pending) continue;
      this.#pending.delete(jobId);
      const { entry } = pending;
      try {
        await entry.write();
        this.#logger.info('job queue: a job outcome was recorded after a retry', { kind: entry.kind, jobId, outcome: entry.outcome, failures: pending.failures });
      } catch (error) {
        this.#failed(entry, pending.failures + 1, error);
      }
    }
  }

  /** Gives the pending writes up (the queue stopped): each job runs again once its lease ends. */
  abandon(): void {
    for (const [jobId, { entry, failures }] of this.#pending) {
      this.#logger.error('job queue: a job outcome was not recorded before the queue stopped; the job runs again when its lease ends', {
        kind: entry.kind,
        jobId,
        outcome: entry.outcome,
        failures,
      });
    }
    this.#pending.clear();
  }

  #failed(entry: OutcomeWrite, failures: number, error: unknown): void {
    const delay = retryDelayMs(failures, Math.random, MAX_RETRY_DELAY_MS);
    this.#pending.set(entry.jobId, { entry, failures, dueAt: this.#clock.now() + delay });
    this.#logger.warn('job queue: the store did not record a job outcome; it is retried', {
      kind: entry.kind,
      jobId: entry.jobId,
      outcome: entry.outcome,
      failures,
      retryInMs: delay,
      error: errorName(error),
    });
  }
}

/** What of an error may be logged or stored: its code or class name, never its message. */
export function errorName(error: unknown): string {
  if (error instanceof VaultError) return error.code;
  return error instanceof Error ? error.name : 'unknown';
}
