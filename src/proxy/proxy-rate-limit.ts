/**
 * The rate limit of unauthenticated calls of inbound proxies (`require_auth: false`,
 * docs/proxies.md, Inbound): fixed windows on the vault's clock, one count per proxy and one per
 * client address. Counts live in this process: several instances each allow the limit.
 */
import { isIP } from 'node:net';
import { TooManyRequestsError } from '../errors/errors.js';
import type { Clock } from '../common/clock.js';

export interface RateLimit {
  /** Calls allowed per window. */
  requests: number;
  /** The window, in ms. */
  windowMs: number;
}

/**
 * Counters kept before old windows are swept out: the map then holds about this many, or the
 * names of one window, whichever is more.
 */
const SWEEP_AT = 10_000;

/** Counts calls per name in fixed windows of the clock. */
export class FixedWindowLimiter {
  readonly #limit: RateLimit;
  readonly #clock: Clock;
  readonly #counts = new Map<string, { window: number; count: number }>();
  /** The window last swept: a sweep removes only older windows, so one per window is enough. */
  #swept = Number.NaN;

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
      // Once per window: sweeping on every new name would scan the whole map each time a flood of
      // new addresses (IPv6 /64s are plentiful) came in, quadratic work on the request thread.
      if (this.#counts.size >= SWEEP_AT && this.#swept !== window) this.#sweep(window);
      this.#counts.set(name, { window, count: 1 });
      return;
    }
    if (entry.count >= this.#limit.requests) {
      const retryAfter = Math.max(1, Math.ceil(((window + 1) * this.#limit.windowMs - now) / 1000));
      throw new TooManyRequestsError(
        `Too many unauthenticated calls ${what}: at most ${this.#limit.requests} per ${this.#limit.windowMs} ms; retry after ${retryAfter} s`,
        retryAfter,
      );
    }
    entry.count++;
  }

  #sweep(window: number): void {
    this.#swept = window;
    for (const [name, entry] of this.#counts) if (entry.window !== window) this.#counts.delete(name);
  }
}

/**
 * The name an address is counted under: an IPv6 address by its /64 (one subscriber's usual
 * allocation, so a client cannot step around its limit by changing the low bits), an IPv4 or
 * IPv4-mapped address as it is. A port (`203.0.113.9:51234`, `[2001:db8::1]:443`, as some reverse
 * proxies write X-Forwarded-For) is not part of the address: else every new source port would be a
 * new count.
 */
export function addressBucket(address: string | null): string {
  if (address === null || address === '') return 'unknown';
  const plain = plainAddress(address);
  if (isIP(plain) === 4) return plain;
  if (isIP(plain) !== 6) return plain;
  const [head, tail] = plain.includes('::') ? plain.split('::') : [plain, null];
  const left = head === '' ? [] : head!.split(':');
  const right = tail === null || tail === '' ? [] : tail.split(':');
  // A dotted IPv4 tail (::ffff:203.0.113.9) stands for two groups.
  const width = [...left, ...right].some((g) => g.includes('.')) ? 7 : 8;
  const groups = tail === null ? left : [...left, ...Array<string>(Math.max(0, width - left.length - right.length)).fill('0'), ...right];
  const numbers = groups.map((g) => (g.includes('.') ? -1 : parseInt(g, 16)));
  // IPv4-mapped (::ffff:a.b.c.d, also written in hex as ::ffff:cb00:7109): the IPv4 address.
  if (numbers.slice(0, 5).every((n) => n === 0) && numbers[5] === 0xffff) {
    const last = groups.slice(6).join(':');
    if (isIP(last) === 4) return last;
    return [numbers[6]! >> 8, numbers[6]! & 255, numbers[7]! >> 8, numbers[7]! & 255].join('.');
  }
  return `${numbers
    .slice(0, 4)
    .map((n) => n.toString(16))
    .join(':')}::/64`;
}

/** An address without the port or brackets some reverse proxies write (`[2001:db8::1]:443`, `203.0.113.9:51234`), nor an IPv6 zone; lower-case. */
export function plainAddress(address: string): string {
  const text = address.trim().toLowerCase();
  return (/^\[([^\]]*)\](?::\d+)?$/.exec(text)?.[1] ?? /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(text)?.[1] ?? text).split('%')[0]!;
}
