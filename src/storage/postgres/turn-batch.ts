import { atTurnEnd } from '../../common/turn-end.js';

/** Most keys one statement carries; a larger turn sends several. */
export const MAX_BATCH = 200;

interface Waiting<K, V> {
  key: K;
  resolve(value: V): void;
  reject(error: unknown): void;
}

/**
 * Lookups asked for during one turn of the event loop, sent together at its end: under load a
 * turn starts many requests, and one statement for all of them costs one round trip, one write
 * to the server's socket and one parse there instead of one each (docs/performance.md). An idle
 * lookup waits only for the end of the current turn. Nothing is kept between turns: this is not a
 * cache, and each lookup sees the database as of its statement, as a lone query would.
 */
export class TurnBatch<K, V> {
  #waiting: Array<Waiting<K, V>> = [];
  readonly #one: (key: K) => Promise<V>;
  readonly #many: (keys: readonly K[]) => Promise<readonly V[]>;

  /**
   * `one` answers a lone key (the plain statement); `many` answers several, in their order, in one
   * statement. A failure of `many` fails every lookup it carried, as it would have failed each.
   */
  constructor(one: (key: K) => Promise<V>, many: (keys: readonly K[]) => Promise<readonly V[]>) {
    this.#one = one;
    this.#many = many;
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
        (error: unknown) => batch.forEach((w) => w.reject(error)),
      );
    }
  };
}
