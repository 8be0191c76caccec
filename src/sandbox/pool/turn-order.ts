/**
 * Whose turn it is among keys that wait (owner-queues.ts: tenants, and the applications of a
 * tenant): the one whose last turn is oldest. Keys that have had no turn since they joined come
 * first, in the order they joined; then the others, in the order of their last turns.
 *
 * A key that had a turn keeps its place even while it has nothing waiting, so that an owner whose
 * run was just started (and who submits the next one at once) comes back behind those that were
 * waiting, rather than ahead of them as a newcomer: without that, a few owners taking turns one run
 * at a time could starve one with a longer queue. At most `remember` such keys are kept; past that
 * the one whose turn is oldest is forgotten (it would come next anyway).
 */
export class TurnOrder<K, V> {
  readonly #fresh = new Map<K, V>();
  readonly #had = new Map<K, V>();
  readonly #isEmpty: (value: V) => boolean;
  readonly #remember: number;

  constructor(isEmpty: (value: V) => boolean, remember: number) {
    this.#isEmpty = isEmpty;
    this.#remember = remember;
  }

  get(key: K): V | undefined {
    return this.#fresh.get(key) ?? this.#had.get(key);
  }

  /** The value of `key`, joining it with `make()` at the back of the keys that have had no turn when absent. */
  join(key: K, make: () => V): V {
    let value = this.get(key);
    if (value === undefined) this.#fresh.set(key, (value = make()));
    return value;
  }

  /** `key` had its turn: to the back of the keys that have had one (joined with `make()` when absent). */
  turn(key: K, make: () => V): V {
    const value = this.get(key) ?? make();
    this.#fresh.delete(key);
    this.#had.delete(key);
    this.#had.set(key, value);
    if (this.#had.size > this.#remember) {
      for (const [k, v] of this.#had) {
        if (!this.#isEmpty(v)) continue;
        this.#had.delete(k);
        break;
      }
    }
    return value;
  }

  /** Drops `key` once it has nothing waiting, if it has had no turn (one that had keeps its place). */
  settle(key: K): void {
    const value = this.#fresh.get(key);
    if (value !== undefined && this.#isEmpty(value)) this.#fresh.delete(key);
  }

  /** The keys with something waiting, in turn order. */
  *waiting(): IterableIterator<[K, V]> {
    for (const map of [this.#fresh, this.#had]) {
      for (const entry of map) if (!this.#isEmpty(entry[1])) yield entry;
    }
  }
}
