/**
 * A local master key held under split knowledge (docs/key-custody.md): the vault starts sealed, and
 * opens when the threshold of shares of one split (key-shares.ts) has been given; `seal()` closes it
 * again and wipes the key and every tenant key unwrapped under it. While sealed every use of a key
 * answers 503 `sealed` (SealedError) and readiness fails.
 */
import { SealedError, ValidationError } from '../errors/errors.js';
import { type KeyProvider, LocalKeyProvider } from './key-provider.js';
import { type KeyShareSet, type ParsedShare, combineShares, matchesKeyCheck, parseShare } from './key-shares.js';

/** Where unsealing stands: how many distinct shares of the threshold have been given. */
export interface SealStatus {
  sealed: boolean;
  threshold: number;
  given: number;
}

export class SealableKeyProvider implements KeyProvider {
  readonly #record: KeyShareSet;
  #open: LocalKeyProvider | null = null;
  #pending = new Map<number, ParsedShare>();
  #listeners: (() => void)[] = [];
  /** Shares are taken one at a time: the last of the threshold combines before the next is read. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Counts seals: a key combined while a seal came in is thrown away, so a seal is never undone. */
  #seals = 0;

  /** `record`: the split's record (`<db>.key-shares`, written by `tokenvault keys split`). */
  constructor(record: KeyShareSet) {
    this.#record = record;
  }

  status(): SealStatus {
    return { sealed: this.#open === null, threshold: this.#record.threshold, given: this.#pending.size };
  }

  /**
   * Takes one share. Refused (ValidationError, the share named by nothing but its position) when it
   * is malformed, of another split, or given already; when it completes the threshold and the key
   * does not match the split's check value, every share given is discarded and unsealing starts over.
   */
  submit(text: string): Promise<SealStatus> {
    const next = this.#queue.then(() => this.#take(text));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #take(text: string): Promise<SealStatus> {
    if (this.#open !== null) return this.status();
    const share = parseShare(typeof text === 'string' ? text : '');
    if (share.set !== this.#record.set || share.threshold !== this.#record.threshold) {
      share.bytes.fill(0);
      throw ValidationError.field('share', 'is refused: it belongs to another split of the key (the split this vault was sealed with is in its .key-shares file)');
    }
    if (this.#pending.has(share.x)) {
      share.bytes.fill(0);
      throw ValidationError.field('share', `is refused: this share was given already (${this.#pending.size} of ${this.#record.threshold} given)`);
    }
    this.#pending.set(share.x, share);
    if (this.#pending.size < this.#record.threshold) return this.status();
    const shares = [...this.#pending.values()];
    this.#pending.clear();
    const seals = this.#seals;
    const key = await combineShares(shares);
    for (const s of shares) s.bytes.fill(0);
    try {
      if (seals !== this.#seals) return this.status();
      if (!matchesKeyCheck(key, this.#record)) {
        throw ValidationError.field(
          'share',
          `is refused: the ${shares.length} shares given do not rebuild this vault's master key (one is from another key or damaged); all were discarded, give them again`,
        );
      }
      this.#open = new LocalKeyProvider(key);
    } finally {
      key.fill(0);
    }
    return this.status();
  }

  /** Seals: the master key, the shares given so far and every tenant key unwrapped leave memory. */
  seal(): SealStatus {
    this.#seals += 1;
    for (const share of this.#pending.values()) share.bytes.fill(0);
    this.#pending.clear();
    const open = this.#open;
    this.#open = null;
    if (open !== null) {
      for (const listener of this.#listeners) listener();
      open.destroy();
    }
    return this.status();
  }

  wrap(key: Uint8Array, context: string): Uint8Array {
    return this.#provider().wrap(key, context);
  }

  unwrap(wrapped: Uint8Array, context: string): Uint8Array {
    return this.#provider().unwrap(wrapped, context);
  }

  check(): void {
    this.#provider();
  }

  async ready(): Promise<void> {
    this.#provider();
  }

  onRevoke(listener: () => void): void {
    this.#listeners.push(listener);
  }

  close(): void {
    this.seal();
  }

  #provider(): LocalKeyProvider {
    if (this.#open === null) throw new SealedError();
    return this.#open;
  }
}
