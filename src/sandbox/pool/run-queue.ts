/**
 * The runs waiting for a worker (worker-pool.ts): top-level runs in per-owner FIFOs served
 * round-robin (owner-queues.ts), at most `maxQueued` of them and at most a share per application
 * and per tenant; and nested runs, which are served first and are bounded by their callers instead.
 *
 * Whether a run may start now (its owner's share of workers) is the pool's to say: `take` and
 * `drain` skip the runs it refuses, which keep their place.
 *
 * A refused run fails with 503 ServiceUnavailableError, not 429: a 429 is the status of the reactor
 * error class RateLimitError, which reactor code throws when the API it calls limits it, and a
 * client must not mistake the one for the other; what is refused depends on the pool's size, not on
 * a rate the caller was given; and the vault already treats the sandbox's 503 as "not the code's
 * fault, try again" (code-check.ts). The message says whose share was full.
 */
import { OwnerQueues } from './owner-queues.js';
import type { RunTask } from './run-task.js';
import type { RunOwner } from '../sandbox.js';

/** How much of the queue one owner may fill (worker-options.ts). */
export interface QueueShares {
  maxQueued: number;
  maxQueuedPerApplication: number;
  maxQueuedPerTenant: number;
}

/** What became of a run offered to the queue. */
export type Admission =
  /** `evicted`: a run of an owner holding more of the full queue, pushed out to make room; the caller fails it. */
  | { queued: true; evicted?: RunTask }
  /** Not queued; `reason` says why (the run fails with 503). */
  | { queued: false; reason: string };

export class RunQueue {
  readonly #shares: QueueShares;
  readonly #owners = new OwnerQueues();
  readonly #nested: RunTask[] = [];

  constructor(shares: QueueShares) {
    this.#shares = shares;
  }

  get size(): number {
    return this.#owners.size + this.#nested.length;
  }

  /**
   * Queues `task` until a worker takes it or it ends. A top-level run of an owner is refused when its
   * application or its tenant already has its share of the queue waiting; any top-level run when the
   * queue is full, unless another owner holds more of it than this one would (then that owner's
   * newest run makes room). A nested run is always queued.
   */
  add(task: RunTask): Admission {
    if (task.depth > 0) {
      this.#nested.push(task);
      task.onDone(() => remove(this.#nested, task));
      return { queued: true };
    }
    const shares = this.#shares;
    if (task.owner !== undefined) {
      const { application, tenant } = this.#owners.queued(task.owner);
      if (application >= shares.maxQueuedPerApplication) {
        return { queued: false, reason: `This application already has ${application} reactor runs waiting for a worker, its share of the queue; try again` };
      }
      if (tenant >= shares.maxQueuedPerTenant) {
        return { queued: false, reason: `This tenant already has ${tenant} reactor runs waiting for a worker, its share of the queue; try again` };
      }
    }
    let evicted: RunTask | undefined;
    if (this.#owners.size >= shares.maxQueued) {
      evicted = this.#owners.evictable(task.owner);
      if (evicted === undefined) return { queued: false, reason: 'Every reactor worker is busy and the run queue is full; try again' };
      this.#owners.delete(evicted);
    }
    this.#owners.push(task);
    task.onDone(() => this.#owners.delete(task));
    return evicted === undefined ? { queued: true } : { queued: true, evicted };
  }

  /** Counts a top-level run that started without waiting as its owner's turn (owner-queues.ts). */
  started(task: RunTask): void {
    if (task.depth === 0) this.#owners.started(task);
  }

  /** Every waiting run, nested ones first. */
  all(): RunTask[] {
    return [...this.#nested, ...this.#owners.all()];
  }

  /**
   * Takes the run a freed worker of `lane` serves next, if any. Shared workers (lane 0): the
   * deepest nested run `mayStart` allows (it unblocks the others), the oldest among equals, else the
   * top-level run whose turn it is. An extra worker of nesting depth d: the oldest nested run of
   * depth d, whatever its owner holds (its caller waits on a worker for it).
   */
  take(lane: number, mayStart: (task: RunTask) => boolean): RunTask | undefined {
    let best: RunTask | undefined;
    for (const task of this.#nested) {
      if (lane === 0 ? !mayStart(task) : task.depth !== lane) continue;
      if (best === undefined || task.depth > best.depth) best = task;
    }
    if (best !== undefined) {
      remove(this.#nested, best);
      return best;
    }
    if (lane !== 0) return undefined;
    const task = this.#owners.next(mayStart);
    if (task !== undefined) this.#owners.served(task);
    return task;
  }

  /**
   * Takes the oldest waiting run of `owner` for a busy worker of that owner to join, when every run
   * waiting is that owner's (a run of any other owner waiting leaves the worker to free as its runs
   * end, so it changes hands) and `accepts` lets it join.
   */
  takeJoining(owner: RunOwner | undefined, accepts: (task: RunTask) => boolean): RunTask | undefined {
    if (this.#nested.length > 0 || this.#owners.size === 0 || this.#owners.queued(owner).application !== this.#owners.size) return undefined;
    const task = this.#owners.next(() => true);
    if (task === undefined || !accepts(task)) return undefined;
    this.#owners.served(task);
    return task;
  }

  /**
   * Takes the waiting runs `tryStart` finds room for: nested runs deepest first, then top-level runs
   * in turn among those `mayStart` allows, until one finds no room.
   */
  drain(tryStart: (task: RunTask) => boolean, mayStart: (task: RunTask) => boolean): void {
    for (const task of [...this.#nested].sort((a, b) => b.depth - a.depth)) {
      if (tryStart(task)) remove(this.#nested, task);
    }
    for (;;) {
      const task = this.#owners.next(mayStart);
      if (task === undefined || !tryStart(task)) break;
      this.#owners.served(task);
    }
  }
}

function remove(list: RunTask[], task: RunTask): void {
  const i = list.indexOf(task);
  if (i >= 0) list.splice(i, 1);
}
