/**
 * Reads of a cache's entries, shared by key: the callers that ask for a key while its read is under
 * way wait for that read instead of starting one each (under load, every request of the turn a
 * cached entry lapsed in would otherwise read the store). A read begun before `forget` answers the
 * callers that were waiting for it, but its value is not kept: the change that made the cache forget
 * may have come after the read's snapshot.
 */
export class SharedLoads<K, V> {
  readonly #loading = new Map<K, Promise<V>>();

  /** `read`'s value for `key`, shared with the callers asking meanwhile; `keep` is called with it unless `key` was forgotten since. */
  load(key: K, read: () => Promise<V>, keep: (value: V) => void): Promise<V> {
    const under = this.#loading.get(key);
    if (under !== undefined) return under;
    const loading: Promise<V> = read().then(
      (value) => {
        if (this.#loading.get(key) === loading) {
          this.#loading.delete(key);
          keep(value);
        }
        return value;
      },
      (error: unknown) => {
        if (this.#loading.get(key) === loading) this.#loading.delete(key);
        throw error;
      },
    );
    this.#loading.set(key, loading);
    return loading;
  }

  /** The read of `key` under way (if any) will not be kept; later callers read afresh. */
  forget(key: K): void {
    this.#loading.delete(key);
  }

  /** As `forget`, for every key. */
  forgetAll(): void {
    this.#loading.clear();
  }
}
