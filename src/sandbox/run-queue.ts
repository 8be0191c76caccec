/**
 * The runs waiting for a worker (worker-pool.ts): top-level runs in a FIFO queue of at most
 * `maxQueued`, and nested runs, which are served first.
 */
import type { RunTask } from './run-task.js';

export class RunQueue {
  readonly #maxQueued: number;
  readonly #queue: RunTask[] = [];
  readonly #nested: RunTask[] = [];

  constructor(maxQueued: number) {
    this.#maxQueued = maxQueued;
  }

  get size(): number {
    return this.#queue.length + this.#nested.length;
  }

  /** Queues `task` until a worker takes it or it ends; false (not queued) when it is top-level and the queue is full. */
  add(task: RunTask): boolean {
    if (task.depth === 0 && this.#queue.length >= this.#maxQueued) return false;
    const queue = task.depth === 0 ? this.#queue : this.#nested;
    queue.push(task);
    task.onDone(() => remove(queue, task));
    return true;
  }

  /** Every waiting run, nested ones first. */
  all(): RunTask[] {
    return [...this.#nested, ...this.#queue];
  }

  /** Takes the run a freed worker of `lane` serves next, if any. */
  take(lane: number): RunTask | undefined {
    const task = this.#waiting(lane);
    if (task !== undefined) remove(task.depth === 0 ? this.#queue : this.#nested, task);
    return task;
  }

  /** The run a freed worker of `lane` serves next: the deepest nested run first (it unblocks the others), then the oldest. */
  #waiting(lane: number): RunTask | undefined {
    let best: RunTask | undefined;
    for (const task of this.#nested) {
      if (lane !== 0 && task.depth !== lane) continue;
      if (best === undefined || task.depth > best.depth) best = task;
    }
    return best ?? (lane === 0 ? this.#queue[0] : undefined);
  }

  /** Takes the waiting runs `tryStart` finds room for: nested runs deepest first, then top-level runs in order. */
  drain(tryStart: (task: RunTask) => boolean): void {
    for (const task of [...this.#nested].sort((a, b) => b.depth - a.depth)) {
      if (tryStart(task)) remove(this.#nested, task);
    }
    while (this.#queue.length > 0) {
      const task = this.#queue[0]!;
      if (!tryStart(task)) break;
      remove(this.#queue, task);
    }
  }
}

function remove(list: RunTask[], task: RunTask): void {
  const i = list.indexOf(task);
  if (i >= 0) list.splice(i, 1);
}
