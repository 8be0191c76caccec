import { atTurnEnd } from '../../common/turn-end.js';

/** Most keys one statement carries; a larger turn sends several. */
export const MAX_BATCH = 200;

interface Waiting<K, V> {
  key: K;
  resolve(value: V): void;
  reject(error: unknown): void;
}

/**
 * Lookups (or writes) asked for during one turn of the event loop, sent together at its end: under
 * load a turn starts many requests, and one statement for all of them costs one round trip, one
 * write to the server's socket, one parse there and, for writes, one commit instead of one each
 * (docs/performance.md). An idle key waits only for the end of the current turn. Nothing is kept
 * between turns: this is not a cache, and each key sees the database as of its statement, as a lone
 * query would.
 */
export class TurnBatch<K, V> {
  #waiting: Array<Waiting<K, V>> = [];
  readonly #one: (key: K) => Promise<V>;
  readonly #many: (keys: readonly K[]) => Promise<readonly V[]>;
  readonly #alone: (error: unknown) => boolean;

  /**
   * `one` answers a lone key (the plain statement); `many` answers several, in their order, in one
   * statement. A failure of `many` fails every key it carried, as it would have failed each; unless
   * `alone(error)` says that the failure may be one key's (a write whose statement was rolled back
   * as a whole): then each key is sent again on its own, so one bad write fails alone.
   */
  constructor(one: (key: K) => Promise<V>, many: (keys: readonly K[]) => Promise<readonly V[]>, alone: (error: unknown) => boolean = () => false) {
    this.#one = one;
    this.#many = many;
    this.#alone = alone;
  }

  load(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      if (this.#waiting.length === 0) atTurnEnd(this.#send);
      this.#waiting.push({ key, resolve, reject });
    });
  }

  readonly #send = (): void => {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (let start = 0; start < waiting.length; start += MAX_BATCH) {
      const batch = waiting.slice(start, start + MAX_BATCH);
      if (batch.length === 1) {
        const [only] = batch as [Waiting<K, V>];
        this.#one(only.key).then(only.resolve, only.reject);
        continue;
      }
      this.#many(batch.map((w) => w.key)).then(
        (values) => batch.forEach((w, i) => w.resolve(values[i] as V)),
        (error: unknown) => {
          if (!this.#alone(error)) batch.forEach((w) => w.reject(error));
          else for (const w of batch) this.#one(w.key).then(w.resolve, w.reject);
        },
      );
    }
  };
}
