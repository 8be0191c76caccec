import { SharedLoads } from '../common/shared-loads.js';
import type { Caller } from './caller.js';

/** Past this many remembered keys the cache starts over (a bound, not an expected size). */
const MAX_CACHED_KEYS = 10_000;

/**
 * Key hash → Caller, remembered for `authCacheMs` (vault option, default 1 s) so a busy client
 * does not cost a store read per request. Only keys that authenticated are remembered, so unknown
 * keys cannot fill it. Every change made through this vault that could change what a key may do
 * (an application updated, regenerated or deleted, a key deleted) clears it at once; another
 * process sharing the database sees such a change within `authCacheMs`. That holds for session
 * keys too: a session ended by its applications' keys changing (src/auth/session-auth.ts) is
 * refused once its remembered Caller lapses, since resolving it reads both applications afresh.
 */
export class AuthCache {
  #entries = new Map<string, { caller: Caller; until: number }>();
  /** Lookups under way, by key hash: the requests presenting a key meanwhile wait for its lookup. */
  #loading = new SharedLoads<string, { caller: Caller; notAfter?: number }>();
  #ms: number;

  constructor(ms: number) {
    this.#ms = ms;
  }

  /** The remembered Caller for a key hash, if still fresh at `now`. */
  get(keyHash: string, now: number): Caller | undefined {
    const entry = this.#entries.get(keyHash);
    return entry !== undefined && now < entry.until ? entry.caller : undefined;
  }

  /** Remembers a Caller until `now + authCacheMs`, and never past `notAfter` (a session's expiry). */
  set(keyHash: string, caller: Caller, now: number, notAfter = Number.POSITIVE_INFINITY): void {
    if (this.#ms <= 0) return;
    if (this.#entries.size >= MAX_CACHED_KEYS) this.#entries.clear();
    this.#entries.set(keyHash, { caller, until: Math.min(now + this.#ms, notAfter) });
  }

  /**
   * Looks a key up with `lookup` and remembers its Caller (as `set`). While remembering is on, the
   * requests that present the same key during its lookup share it: under load, every request of
   * the turn a remembered key lapsed in would otherwise read the store. A lookup begun before a
   * `clear()` answers the requests that were waiting for it, but is not remembered, and later
   * requests look the key up afresh.
   */
  load(keyHash: string, now: number, lookup: () => Promise<{ caller: Caller; notAfter?: number }>): Promise<Caller> {
    if (this.#ms <= 0) return lookup().then(({ caller }) => caller);
    return this.#loading.load(keyHash, lookup, ({ caller, notAfter }) => this.set(keyHash, caller, now, notAfter)).then(({ caller }) => caller);
  }

  /** Forgets every remembered key, and every lookup under way. */
  clear(): void {
    this.#entries.clear();
    this.#loading.forgetAll();
  }
}
