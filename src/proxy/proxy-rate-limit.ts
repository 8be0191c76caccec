/**
 * The rate limit of unauthenticated calls of inbound proxies (`require_auth: false`,
 * docs/proxies.md, Inbound): fixed windows on the vault's clock, one count per proxy and one per
 * client address. Counts live in this process: several instances each allow the limit.
 */
import { TooManyRequestsError } from '../errors/errors.js';
import type { Clock } from '../common/clock.js';

export interface RateLimit {
  /** Calls allowed per window. */
  requests: number;
  /** The window, in ms. */
  windowMs: number;
}

/** Counters kept before old windows are swept out: a flood of addresses cannot grow the map without bound. */
const SWEEP_AT = 10_000;

/** Counts calls per name in fixed windows of the clock. */
export class FixedWindowLimiter {
  readonly #limit: RateLimit;
  readonly #clock: Clock;
  readonly #counts = new Map<string, { window: number; count: number }>();

  constructor(limit: RateLimit, clock: Clock) {
    this.#limit = limit;
    this.#clock = clock;
  }

  /** Counts one call of `name`; TooManyRequestsError (429, Retry-After) when over the limit, saying `what` was limited. */
  take(name: string, what: string): void {
    const now = this.#clock.now();
    const window = Math.floor(now / this.#limit.windowMs);
    const entry = this.#counts.get(name);
    if (entry === undefined || entry.window !== window) {
      if (this.#counts.size >= SWEEP_AT) this.#sweep(window);
      this.#counts.set(name, { window, count: 1 });
      return;
    }
    if (entry.count >= this.#limit.requests) {
      const retryAfter = Math.max(1, Math.ceil(((window + 1) * this.#limit.windowMs - now) / 1000));
      throw new TooManyRequestsError(`Too many unauthenticated calls ${what}: at most ${this.#limit.requests} per ${this.#limit.windowMs} ms; retry after ${retryAfter} s`, retryAfter);
    }
    entry.count++;
  }

  #sweep(window: number): void {
    for (const [name, entry] of this.#counts) if (entry.window !== window) this.#counts.delete(name);
  }
}

/**
 * The name an address is counted under: an IPv6 address by its /64 (one subscriber's usual
 * allocation, so a client cannot step around its limit by changing the low bits), an IPv4 or
 * IPv4-mapped address as it is.
 */
export function addressBucket(address: string | null): string {
  if (address === null || address === '') return 'unknown';
  const plain = address.replace(/^\[|\]$/g, '').split('%')[0]!.toLowerCase();
  if (!plain.includes(':') || /^::ffff:\d+\.\d+\.\d+\.\d+$/.test(plain)) return plain.replace(/^::ffff:/, '');
  const [head, tail] = plain.includes('::') ? plain.split('::') : [plain, null];
  const left = head === '' ? [] : head!.split(':');
  const right = tail === null || tail === '' ? [] : tail.split(':');
  const groups = tail === null ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}
