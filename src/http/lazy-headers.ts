/**
 * Headers over a source the HTTP layer already holds (a Node message's parsed headers,
 * node-request.ts; a text response's record, record-headers.ts), read from it until something
 * changes them or reads them whole; then filled into the real Headers once, and Headers' own from
 * there on. Filling (undici validates and sorts every name and value) costs more on a token read
 * than routing, authentication and decryption together, and most readers `get` a few names only.
 */
export abstract class LazyHeaders extends Headers {
  #filled = false;

  /** Appends every header of the source, in order; called once, by `fill`. */
  protected abstract appendAll(append: (name: string, value: string) => void): void;

  /** One header's value in the source (`name` lower-case), or null. */
  protected abstract read(name: string): string | null;

  protected get filled(): boolean {
    return this.#filled;
  }

  protected fill(): void {
    if (this.#filled) return;
    this.#filled = true;
    this.appendAll((name, value) => super.append(name, value));
  }

  override get(name: string): string | null {
    return this.#filled ? super.get(name) : this.read(name.toLowerCase());
  }

  override has(name: string): boolean {
    return this.#filled ? super.has(name) : this.read(name.toLowerCase()) !== null;
  }

  override getSetCookie(): string[] {
    this.fill();
    return super.getSetCookie();
  }

  override forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    this.fill();
    super.forEach(callback, thisArg);
  }

  override append(name: string, value: string): void {
    this.fill();
    super.append(name, value);
  }

  override delete(name: string): void {
    this.fill();
    super.delete(name);
  }

  override set(name: string, value: string): void {
    this.fill();
    super.set(name, value);
  }

  // Iteration (entries, keys, values, for…of) as Headers has it: after filling.
  entries(): IterableIterator<[string, string]> {
    this.fill();
    return iterate(this, 'entries');
  }

  keys(): IterableIterator<string> {
    this.fill();
    return iterate(this, 'keys');
  }

  values(): IterableIterator<string> {
    this.fill();
    return iterate(this, 'values');
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/** Headers' own iterator methods (the compiler's lib here does not declare them). */
function iterate<T>(headers: Headers, method: 'entries' | 'keys' | 'values'): IterableIterator<T> {
  return (Headers.prototype as unknown as Record<string, () => IterableIterator<T>>)[method]!.call(headers);
}
