import { atTurnEnd } from '../../common/turn-end.js';

/**
 * Group commit for SQLite writes. Writes submitted during an event-loop turn (the requests being
 * served concurrently) wait for the end of the turn (`setImmediate`) and are written together in
 * one transaction; a lone write is written alone at the end of its turn. A commit costs about as
 * much as the insert itself (the WAL frames of every page touched, and an fsync at
 * synchronous=full, the default of `tokenvault serve`), so under concurrent load one commit for
 * many creations multiplies the write rate. An earlier version wrote the turn's first creation at
 * once: under load that was two commits (two fsyncs) per turn instead of one
 * (test/bench/table.mjs, docs/performance.md).
 *
 * Nothing is acknowledged before its transaction commits: a write's promise settles only after
 * its batch's COMMIT. If the batch fails as a whole, each write is retried on its own, so one bad
 * write fails alone.
 */
export class GroupCommit<I, R> {
  readonly #one: (item: I) => R;
  readonly #many: (items: I[]) => R[];
  #queue: { item: I; resolve: (result: R) => void; reject: (error: unknown) => void }[] = [];

  /**
   * @param one writes one item in its own transaction (or a single atomic statement)
   * @param many writes every item, in order, in one transaction; the results in the same order
   */
  constructor(one: (item: I) => R, many: (items: I[]) => R[]) {
    this.#one = one;
    this.#many = many;
  }

  submit(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (this.#queue.length === 0) atTurnEnd(this.#endTurn);
      this.#queue.push({ item, resolve, reject });
    });
  }

  /** Writes whatever is queued now (before the store closes). */
  flush(): void {
    const queue = this.#queue;
    if (queue.length === 0) return;
    this.#queue = [];
    if (queue.length > 1) {
      let results: R[] | null = null;
      try {
        results = this.#many(queue.map((entry) => entry.item));
      } catch {
        // Rolled back as a whole; the writes are retried one by one below.
      }
      if (results !== null) {
        for (let i = 0; i < queue.length; i++) queue[i]!.resolve(results[i]!);
        return;
      }
    }
    for (const entry of queue) {
      try {
        entry.resolve(this.#one(entry.item));
      } catch (error) {
        entry.reject(error);
      }
    }
  }

  #endTurn = (): void => {
    this.flush();
  };
}
