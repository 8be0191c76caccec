import type { Clock } from '../clock.js';
import type { DeliveryQueue, EnqueueJob, JobOutcome } from './job-contract.js';

/**
 * A stand-in for the durable job queue (src/jobs, issue 11 "Background work"), in memory and for
 * one process: it keeps the `vault.worker` contract (`runDue`, `start`, `stop`) so webhook delivery
 * and its tests run before the jobs core is merged, which replaces it.
 */
export class InterimQueue implements DeliveryQueue {
  #clock: Clock;
  #handlers = new Map<string, (payload: unknown) => Promise<JobOutcome | void>>();
  #jobs: { kind: string; payload: unknown; runAt: number; key: string | undefined }[] = [];

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  register(kind: string, handler: (payload: unknown) => Promise<JobOutcome | void>): void {
    this.#handlers.set(kind, handler);
  }

  async enqueue(input: EnqueueJob): Promise<string | null> {
    if (input.key !== undefined && this.#jobs.some((job) => job.key === input.key)) return null;
    this.#jobs.push({ kind: input.kind, payload: input.payload, runAt: input.runAt ?? this.#clock.now(), key: input.key });
    return input.key ?? null;
  }

  /** Runs every job due now (by the clock), once; returns how many ran. */
  async runDue(): Promise<number> {
    const now = this.#clock.now();
    const due = this.#jobs.filter((job) => job.runAt <= now);
    this.#jobs = this.#jobs.filter((job) => job.runAt > now);
    for (const job of due) {
      const outcome = await this.#handlers.get(job.kind)?.(job.payload);
      if (outcome?.status === 'retry') this.#jobs.push({ ...job, runAt: outcome.runAt });
    }
    return due.length;
  }

  start(): void {}
  async stop(): Promise<void> {}
}
