/**
 * Headers over a record of lower-case names the HTTP layer made itself (a text response's headers,
 * json-response.ts), read from the record until something changes them. Filling a real Headers
 * from a record (undici validates and sorts every name and value) was the largest single cost of
 * handing a token read's response to the Node adapter, which only reads them (forEach,
 * getSetCookie); with this they are read as they are.
 */
export class RecordHeaders extends Headers {
  readonly #record: Readonly<Record<string, string>>;
  #filled = false;

  /** `record`: lower-case names, values already valid and trimmed; it must not change afterwards. */
  constructor(record: Readonly<Record<string, string>>) {
    super();
    this.#record = record;
  }

  #fill(): void {
    if (this.#filled) return;
    this.#filled = true;
    for (const name of Object.keys(this.#record)) super.append(name, this.#record[name]!);
  }

  override get(name: string): string | null {
    if (this.#filled) return super.get(name);
    const lower = name.toLowerCase();
    return Object.hasOwn(this.#record, lower) ? this.#record[lower]! : null;
  }

  override has(name: string): boolean {
    return this.#filled ? super.has(name) : Object.hasOwn(this.#record, name.toLowerCase());
  }

  override getSetCookie(): string[] {
    if (this.#filled) return super.getSetCookie();
    const cookie = this.#record['set-cookie'];
    return Object.hasOwn(this.#record, 'set-cookie') && cookie !== undefined ? [cookie] : [];
  }

  override forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    if (this.#filled) return super.forEach(callback, thisArg);
    // In the order Headers iterates: names sorted (each name appears once in a record).
    for (const name of Object.keys(this.#record).sort()) callback.call(thisArg, this.#record[name]!, name, this);
  }

  override append(name: string, value: string): void {
    this.#fill();
    super.append(name, value);
  }

  override delete(name: string): void {
    this.#fill();
    super.delete(name);
  }

  override set(name: string, value: string): void {
    this.#fill();
    super.set(name, value);
  }

  // Iteration (entries, keys, values, for…of) as Headers has it: after filling.
  entries(): IterableIterator<[string, string]> {
    this.#fill();
    return iterate(this, 'entries');
  }

  keys(): IterableIterator<string> {
    this.#fill();
    return iterate(this, 'keys');
  }

  values(): IterableIterator<string> {
    this.#fill();
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
