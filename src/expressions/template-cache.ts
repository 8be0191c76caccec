/** Counters of the parsed-template cache, for tests and diagnostics. */
export interface ExpressionCacheStats {
  size: number;
  hits: number;
  misses: number;
}

/** Parsed templates by source text, least recently used dropped first (approximately: see get). */
export class TemplateCache<T> {
  /** Each value with the tick of its last (re-)insertion. */
  readonly #entries = new Map<string, { value: T; stamp: number }>();
  readonly #size: number;
  readonly #refreshAge: number;
  /** Counts insertions and refreshes; an entry's `stamp` is the tick of its last one. */
  #tick = 0;
  #hits = 0;
  #misses = 0;

  constructor(size: number) {
    this.#size = size;
    this.#refreshAge = Math.max(1, Math.floor(size / 2));
  }

  /** The cached value, counted as a hit; undefined (a miss) when absent. */
  get(template: string): T | undefined {
    const cached = this.#entries.get(template);
    if (cached === undefined) {
      this.#misses++;
      return undefined;
    }
    this.#hits++;
    // Re-inserted (Map keeps insertion order) only once it has aged half the cache: a hot
    // template costs a lookup, not a delete and a set on every render, and a template in use
    // still outlives at least cacheSize / 2 newer ones.
    if (this.#tick - cached.stamp >= this.#refreshAge) {
      this.#entries.delete(template);
      this.#entries.set(template, cached);
      cached.stamp = ++this.#tick;
    }
    return cached.value;
  }

  set(template: string, value: T): void {
    if (this.#size === 0) return;
    if (this.#entries.size >= this.#size) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(template, { value, stamp: ++this.#tick });
  }

  stats(): ExpressionCacheStats {
    return { size: this.#entries.size, hits: this.#hits, misses: this.#misses };
  }
}
