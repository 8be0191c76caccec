import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { JobRecord, Store } from '../storage/store.js';
import { retryDelayMs } from './backoff.js';
import { JobOutcomes, errorName, type OutcomeWrite } from './job-outcomes.js';
import type { EnqueueInput, JobContext, JobHandler, JobOutcome, JobQueueOptions, RecurringOptions, Registration } from './job-types.js';

export type { EnqueueInput, JobContext, JobHandler, JobOutcome, JobQueueOptions, RecurringOptions } from './job-types.js';

/** Attempts a job gets when its kind was registered without `maxAttempts`. */
const DEFAULT_MAX_ATTEMPTS = 10;

/** The lease a claim takes before the kind's own lease is applied. */
const CLAIM_LEASE_MS = 60_000;

/**
 * The one background-work mechanism: jobs live in the store, are claimed with a lease (atomically,
 * so a job runs on one instance at a time while its lease is live) and run by the handler
 * registered for their kind. A worker that dies leaves its jobs to be claimed again when their
 * leases run out: delivery is at-least-once, so handlers are idempotent.
 *
 * `start()` polls in the background; `runDue()` runs what is due now and waits for it (tests drive
 * the queue with it and a ManualClock, without sleeping).
 */
export class JobQueue {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #options: JobQueueOptions;
  readonly #owner = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  readonly #handlers = new Map<string, Registration>();
  /** The kinds this instance claims: those it has handlers for. */
  #kinds: readonly string[] = [];
  readonly #running = new Map<string, { done: Promise<void>; abort: AbortController }>();
  #timer: NodeJS.Timeout | null = null;
  #started = false;
  #polling: Promise<void> | null = null;
  #pollAgain = false;
  /** Counts stops, so a runDue loop in progress ends at a stop instead of taking released jobs again. */
  #stops = 0;
  readonly #outcomes: JobOutcomes;
  /** The latest clock reading: a later one below it is a clock stepped back. */
  #lastNow = -Infinity;

  constructor(options: JobQueueOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#options = options;
    this.#outcomes = new JobOutcomes(options.clock, options.logger);
  }

  /** This instance's lease owner name (host/pid/random). */
  get owner(): string {
    return this.#owner;
  }

  /** Whether the background polling runs. */
  get started(): boolean {
    return this.#started;
  }

  /**
   * Registers the handler of a kind; this instance then claims jobs of that kind (and only of the
   * kinds it has handlers for). `leaseMs` (default 60 s) must exceed the longest run: past it,
   * another worker may claim the job. `maxAttempts` (default 10) bounds retries of thrown errors;
   * it is stored with each job of the kind enqueued here.
   */
  register(kind: string, handler: JobHandler, options: { leaseMs?: number; maxAttempts?: number } = {}): void {
    if (this.#handlers.has(kind)) throw new Error(`a handler for job kind '${kind}' is already registered`);
    this.#handlers.set(kind, { handler, leaseMs: options.leaseMs ?? CLAIM_LEASE_MS, maxAttempts: options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS });
    this.#kinds = [...this.#handlers.keys()];
  }

  /**
   * Registers a recurring kind: one job of it (keyed by the kind) runs `handler`, then is due again
   * `intervalMs` later. It is never dropped: a throw is retried with backoff capped at the interval,
   * so a failing run is retried at least as often as the job would run anyway. scheduleRecurring
   * stores it.
   */
  registerRecurring(kind: string, handler: (ctx: JobContext) => Promise<void>, options: RecurringOptions): void {
    this.register(kind, async (_payload, ctx) => handler(ctx), options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs });
    this.#handlers.get(kind)!.recurring = { intervalMs: options.intervalMs, schedule: options.schedule !== false };
  }

  /**
   * Stores each scheduled recurring job, due one interval from now; one already stored is made due
   * no later than that (Store.scheduleJob), so a clock stepped back does not postpone it. The vault
   * calls this at start, and the queue again when it sees the clock go back.
   */
  async scheduleRecurring(): Promise<void> {
    const now = this.#clock.now();
    for (const [kind, registration] of this.#handlers) {
      if (!registration.recurring?.schedule) continue;
      await this.#store.scheduleJob(this.newJob({ kind, key: kind, tenantId: null, payload: null, runAt: now + registration.recurring.intervalMs }));
    }
  }

  /**
   * The record of a new job, not stored: for a store operation that stores it atomically with what
   * it works on (call notifyEnqueued after). Its bound on attempts is its kind's.
   */
  newJob(input: EnqueueInput): JobRecord {
    const now = this.#clock.now();
    return {
      id: randomUUID(),
      tenantId: input.tenantId,
      kind: input.kind,
      key: input.key ?? null,
      payload: JSON.stringify(input.payload ?? null),
      runAt: input.runAt ?? now,
      attempts: 0,
      maxAttempts: this.#handlers.get(input.kind)?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      leaseOwner: null,
      leaseExpiresAt: null,
      createdAt: now,
      lastError: null,
    };
  }

  /** Stores a job; its id, or null when `key` is given and a job with that key exists. */
  async enqueue(input: EnqueueInput): Promise<string | null> {
    const job = this.newJob(input);
    const now = job.createdAt;
    if (!(await this.#store.enqueueJob(job))) return null;
    if (job.runAt <= now) this.notifyEnqueued();
    return job.id;
  }

  /** Wakes a started queue for a due job stored here by other means (a store operation that enqueues atomically with its record). */
  notifyEnqueued(): void {
    if (this.#started) this.#schedulePoll(0);
  }

  /** Claims and runs every job due now (and those the runs enqueue, when due), and waits for them. Returns how many ran. */
  async runDue(): Promise<number> {
    let ran = 0;
    const stops = this.#stops;
    while (stops === this.#stops) {
      await this.#beforeClaim();
      const jobs = await this.#claim(Math.max(1, this.#options.concurrency));
      if (jobs.length === 0) break;
      await Promise.all(jobs.map((job) => this.#run(job)));
      ran += jobs.length;
    }
    return ran;
  }

  /** Starts polling for due jobs (idempotent). */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#schedulePoll(0);
  }

  /**
   * Stops polling, lets running jobs finish for up to `shutdownGraceMs`, then aborts the rest and
   * releases their leases so another worker (or this one, restarted) takes them at once.
   */
  async stop(): Promise<void> {
    this.#started = false;
    this.#stops++;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#polling;
    const running = [...this.#running.values()];
    if (running.length === 0) return;
    const all = Promise.all(running.map((r) => r.done));
    if (this.#options.shutdownGraceMs > 0) {
      let timeout: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise<void>((resolve) => (timeout = setTimeout(resolve, this.#options.shutdownGraceMs)))]);
      clearTimeout(timeout);
    }
    for (const r of this.#running.values()) r.abort.abort();
    await all;
    await this.#finishOutcomes();
  }

  /** One last try at the outcomes the store refused, while it is still open; the rest are given up. */
  async #finishOutcomes(): Promise<void> {
    if (this.#outcomes.pending === 0) return;
    await this.#outcomes.retryDue(true);
    this.#outcomes.abandon();
  }

  /**
   * Before each claim: retries the outcome writes that are due, and when the clock went back since
   * the last look, makes the recurring jobs due within their interval again (their run_at was set
   * from the clock before the step). Never rejects.
   */
  async #beforeClaim(): Promise<void> {
    await this.#outcomes.retryDue();
    const now = this.#clock.now();
    const last = this.#lastNow;
    this.#lastNow = now;
    if (now >= last) return;
    this.#logger.warn('job queue: the clock went back; recurring jobs are made due within their interval', { steppedBackMs: last - now });
    try {
      await this.scheduleRecurring();
    } catch (error) {
      // Tried again at the next step back, and at the next start; the jobs still run when due.
      this.#lastNow = last;
      this.#logger.warn('job queue: rescheduling recurring jobs after a clock step failed', { error: errorName(error) });
    }
  }

  #schedulePoll(delayMs: number): void {
    if (!this.#started) return;
    if (this.#polling) {
      this.#pollAgain = true;
      return;
    }
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#polling = this.#poll().finally(() => {
        this.#polling = null;
        const again = this.#pollAgain;
        this.#pollAgain = false;
        this.#schedulePoll(again ? 0 : this.#options.pollIntervalMs);
      });
    }, delayMs);
    this.#timer.unref();
  }

  /** Fills free run slots with due jobs; each finished job looks for more. */
  async #poll(): Promise<void> {
    try {
      await this.#beforeClaim();
      const free = this.#options.concurrency - this.#running.size;
      if (free <= 0) return;
      for (const job of await this.#claim(free)) {
        // #run never rejects (outcomes are recorded or kept for a retry): the second callback is
        // for the rule that every promise is handled, and for a bug.
        this.#run(job).then(
          () => this.#schedulePoll(0),
          (error: unknown) => this.#logger.error('job queue: a job run failed unexpectedly', { kind: job.kind, jobId: job.id, error: errorName(error) }),
        );
      }
    } catch (error) {
      this.#logger.error('job queue: claiming jobs failed', { error: errorName(error) });
    }
  }

  #claim(limit: number): Promise<JobRecord[]> {
    return this.#store.claimJobs(this.#owner, this.#clock.now(), CLAIM_LEASE_MS, limit, this.#kinds);
  }

  /** Runs a claimed job and records its outcome; never rejects. */
  #run(job: JobRecord): Promise<void> {
    const abort = new AbortController();
    this.#outcomes.supersede(job.id);
    const done = this.#execute(job, abort.signal)
      .then((write) => this.#outcomes.record(write))
      .catch((error: unknown) => this.#logger.error('job queue: a job run failed unexpectedly', { kind: job.kind, jobId: job.id, error: errorName(error) }))
      .finally(() => this.#running.delete(job.id));
    this.#running.set(job.id, { done, abort });
    return done;
  }

  /** Runs the handler; answers the store write that records how it ended (#run makes it). */
  async #execute(job: JobRecord, signal: AbortSignal): Promise<OutcomeWrite> {
    const registration = this.#handlers.get(job.kind);
    const store = this.#store;
    const owner = this.#owner;
    const outcome = (name: OutcomeWrite['outcome'], write: () => Promise<boolean>): OutcomeWrite => ({ jobId: job.id, kind: job.kind, outcome: name, write });
    const finish = (name: OutcomeWrite['outcome']) => outcome(name, () => store.finishJob(job.id, owner));
    const reschedule = (name: OutcomeWrite['outcome'], runAt: number, error: string | null, attempts: 'keep' | 'reset') =>
      outcome(name, () => store.rescheduleJob(job.id, owner, runAt, error, attempts));
    // Claims take registered kinds only (a kind another version knows, in a rolling upgrade, is
    // left to that version); registrations are never removed.
    if (!registration) throw new Error(`claimed a job of unregistered kind '${job.kind}'`);
    const renew = async (leaseMs = registration.leaseMs) => {
      if (!(await store.renewJobLease(job.id, owner, this.#clock.now() + leaseMs))) throw new Error('the job lease was lost');
    };
    const recurring = registration.recurring;
    let result: JobOutcome | void;
    try {
      if (registration.leaseMs !== CLAIM_LEASE_MS) await renew();
      result = await registration.handler(JSON.parse(job.payload) as unknown, { job, signal, renew });
    } catch (error) {
      if (signal.aborted) return reschedule('released', this.#clock.now(), 'released at shutdown', 'keep');
      const code = errorName(error);
      if (recurring) {
        // Never dropped: backoff grows with the failures in a row, capped at the interval, so the
        // job keeps (at least) its schedule and sweeps again once the cause is gone.
        const delay = Math.min(retryDelayMs(job.attempts), recurring.intervalMs);
        this.#logger.warn('recurring job failed; retrying', { kind: job.kind, jobId: job.id, attempts: job.attempts, retryInMs: delay, error: code });
        return reschedule('retry', this.#clock.now() + delay, code, 'keep');
      }
      if (job.attempts >= job.maxAttempts) {
        this.#logger.error('job failed for good', { kind: job.kind, jobId: job.id, attempts: job.attempts, error: code });
        return finish('dropped');
      }
      this.#logger.warn('job failed; retrying', { kind: job.kind, jobId: job.id, attempts: job.attempts, error: code });
      return reschedule('retry', this.#clock.now() + retryDelayMs(job.attempts), code, 'keep');
    }
    // A recurring job's run succeeded: due one interval from now (the clock now, not when it was
    // stored: a clock stepped back does not postpone it), its attempts counted from 0 again.
    if (recurring) return reschedule('reschedule', this.#clock.now() + recurring.intervalMs, null, 'reset');
    if (result === undefined || result.status === 'done') return finish('done');
    if (result.status === 'retry') return reschedule('retry', result.runAt, result.error, 'keep');
    // Attempts count from 0 again after a successful run, so failures spread over many successful
    // runs never add up to maxAttempts (the sweep once stopped for good that way).
    return reschedule('reschedule', result.runAt, null, 'reset');
  }
}
