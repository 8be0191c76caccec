import { atTurnEnd } from '../../common/turn-end.js';

/** Most keys one statement carries; a larger turn sends several. */
export const MAX_BATCH = 200;

/**
 * How long a statement in flight holds back the keys that arrive meanwhile (see `maxInFlight`) before
 * they go out anyway: a connection that hangs without failing must not stall every later key.
 */
export const STALL_MS = 1000;

interface Waiting<K, V> {
  key: K;
  resolve(value: V): void;
  reject(error: unknown): void;
}

export interface TurnBatchOptions {
  /**
   * Whether a failure of the batch statement may be one key's (a write whose statement was rolled
   * back as a whole): then each key is sent again on its own, so one bad write fails alone.
   */
  alone?: (error: unknown) => boolean;
  /**
   * Most statements in flight at once (default: no bound). Keys asked for while that many are
   * in flight wait until one answers, then go out together: under load the batches grow instead of
   * the statements multiplying, and each statement's fixed cost on the server (parse, plan, and for
   * writes the commit and its WAL flush) is shared by more keys (docs/performance.md). A key asked
   * for while nothing is in flight still waits only for the end of its turn.
   */
  maxInFlight?: number;
}

/**
 * Lookups (or writes) asked for during one turn of the event loop, sent together at its end: under
 * load a turn starts many requests, and one statement for all of them costs one round trip, one
 * write to the server's socket, one parse there and, for writes, one commit instead of one each
 * (docs/performance.md). An idle key waits only for the end of the current turn. Nothing is kept
 * once a key is answered: this is not a cache, and each key sees the database as of its statement,
 * as a lone query would.
 */
export class TurnBatch<K, V> {
  #waiting: Array<Waiting<K, V>> = [];
  #scheduled = false;
  #inFlight = 0;
  readonly #one: (key: K) => Promise<V>;
  readonly #many: (keys: readonly K[]) => Promise<readonly V[]>;
  readonly #alone: (error: unknown) => boolean;
  readonly #maxInFlight: number;

  /** `one` answers a lone key (the plain statement); `many` answers several, in their order, in one statement. */
  constructor(one: (key: K) => Promise<V>, many: (keys: readonly K[]) => Promise<readonly V[]>, options: TurnBatchOptions = {}) {
    this.#one = one;
    this.#many = many;
    this.#alone = options.alone ?? (() => false);
    this.#maxInFlight = options.maxInFlight ?? Number.POSITIVE_INFINITY;
  }

  load(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      if (!this.#scheduled) {
        this.#scheduled = true;
        atTurnEnd(this.#send);
      }
      this.#waiting.push({ key, resolve, reject });
    });
  }

  readonly #send = (): void => {
    this.#scheduled = false;
    while (this.#waiting.length > 0 && this.#inFlight < this.#maxInFlight) {
      const batch = this.#waiting.splice(0, MAX_BATCH);
      this.#inFlight++;
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        clearTimeout(stall);
        this.#inFlight--;
        if (this.#waiting.length > 0 && !this.#scheduled) this.#send();
      };
      const stall = Number.isFinite(this.#maxInFlight) ? setTimeout(release, STALL_MS) : undefined;
      stall?.unref?.();
      // #dispatch answers every key itself; should it still fail (a `one` that throws instead of
      // rejecting), its keys get that error rather than wait forever (settled ones ignore it).
      this.#dispatch(batch).then(release, (error: unknown) => {
        release();
        for (const w of batch) w.reject(error);
      });
    }
  };

  /** Sends one batch and answers each of its keys; settles (never rejects) once all are answered. */
  async #dispatch(batch: Array<Waiting<K, V>>): Promise<void> {
    if (batch.length === 1) {
      const [only] = batch as [Waiting<K, V>];
      await this.#one(only.key).then(only.resolve, only.reject);
      return;
    }
    try {
      const values = await this.#many(batch.map((w) => w.key));
      batch.forEach((w, i) => w.resolve(values[i] as V));
    } catch (error) {
      if (!this.#alone(error)) batch.forEach((w) => w.reject(error));
      else await Promise.all(batch.map((w) => this.#one(w.key).then(w.resolve, w.reject)));
    }
  }
}
