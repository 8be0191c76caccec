import { LazyHeaders } from './lazy-headers.js';

/**
 * Headers over a record of lower-case names the HTTP layer made itself (a text response's headers,
 * json-response.ts), read from the record until something changes them (lazy-headers.ts). The
 * Node adapter only reads them (forEach, getSetCookie), so a token read's answer never fills them.
 */
export class RecordHeaders extends LazyHeaders {
  readonly #record: Readonly<Record<string, string>>;

  /** `record`: lower-case names, values already valid and trimmed; it must not change afterwards. */
  constructor(record: Readonly<Record<string, string>>) {
    super();
    this.#record = record;
  }

  protected appendAll(append: (name: string, value: string) => void): void {
    for (const name of Object.keys(this.#record)) append(name, this.#record[name]!);
  }

  protected read(name: string): string | null {
    return Object.hasOwn(this.#record, name) ? this.#record[name]! : null;
  }

  override getSetCookie(): string[] {
    if (this.filled) return super.getSetCookie();
    const cookie = this.read('set-cookie');
    return cookie === null ? [] : [cookie];
  }

  override forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    if (this.filled) return super.forEach(callback, thisArg);
    // In the order Headers iterates: names sorted (each name appears once in a record).
    for (const name of Object.keys(this.#record).sort()) callback.call(thisArg, this.#record[name]!, name, this);
  }
}
