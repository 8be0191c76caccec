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

  /** Forgets every remembered key. */
  clear(): void {
    this.#entries.clear();
  }
}
