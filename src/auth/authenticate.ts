import type { Clock } from '../common/clock.js';
import { AuthenticationError } from '../errors/errors.js';
import type { ApplicationKeyMatch, Store } from '../storage/store.js';
import { SESSION_KEY_PREFIX, hashApiKey, hashesEqual } from './api-keys.js';
import type { AuthCache } from './auth-cache.js';
import { type Caller, requirePageOrigin } from './caller.js';
import { resolveSessionKey } from './session-auth.js';
import { withinBoundGrants } from './session-grants.js';

/**
 * Authentication, in one place: what `vault.authenticate` (and so every HTTP request) calls. A key
 * is hashed (api-keys.ts), looked up among session keys (session-auth.ts) and application keys,
 * and the Caller it resolves to (caller.ts, bounded by session-grants.ts) remembered in the auth
 * cache (auth-cache.ts), which the services clear when a change could alter what a key may do.
 */
export class Authenticator {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #callers: AuthCache;

  constructor(deps: { store: Store; clock: Clock; authCache: AuthCache }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#callers = deps.authCache;
  }

  /**
   * Resolves an API key (any live key of an application) or an authorized session key to its
   * Caller; AuthenticationError for a missing or unknown key, and for a session key that is
   * expired or not yet authorized (saying which). A resolved key is remembered for `authCacheMs`
   * (vault option, default 1 s; a session key never past its expiry): changes made through this
   * vault (application update, regenerate, delete, key deletion) forget every remembered key at
   * once; a change made by another process sharing the database takes effect within that time.
   *
   * `pageOrigin`: the origin of the page a browser element's frame works for, when the request
   * comes from one (docs/elements.md); AuthorizationError when the application (a session: its
   * creating public application) lists allowed origins and this is not one of them.
   * `requestOrigin`: a browser request's `Origin` when it is not the vault's own, checked alike.
   */
  async authenticate(key: string | null | undefined, pageOrigin: string | null = null, requestOrigin: string | null = null): Promise<Caller> {
    if (typeof key !== 'string' || key.length === 0) throw new AuthenticationError('An API key is required');
    const hashed = hashApiKey(key);
    const now = this.#clock.now();
    // A remembered key answers here, without a second async step: every request of a busy client
    // passes this way.
    const caller = this.#callers.get(hashed.keyHash, now) ?? (await this.#resolve(key, hashed, now));
    requirePageOrigin(caller, pageOrigin, requestOrigin);
    return caller;
  }

  /** A key the auth cache does not remember: requests presenting it meanwhile share one lookup. */
  #resolve(key: string, { keyHash, keyLookup }: { keyHash: string; keyLookup: string }, now: number): Promise<Caller> {
    return this.#callers.load(keyHash, now, () => this.#lookup(key, keyHash, keyLookup, now));
  }

  /** The Caller of a key not remembered, read from the store; a session's only until it expires. */
  async #lookup(key: string, keyHash: string, keyLookup: string, now: number): Promise<{ caller: Caller; notAfter?: number }> {
    if (key.startsWith(SESSION_KEY_PREFIX)) {
      const session = await resolveSessionKey(this.#store, keyHash, keyLookup, now);
      if (session !== null) return { caller: session.caller, notAfter: session.expiresAt };
    }
    const candidates = await this.#store.findApplicationKeys(keyLookup);
    // Compare against every candidate so the time does not depend on which one matched.
    let match: ApplicationKeyMatch | undefined;
    for (const found of candidates) if (hashesEqual(found.key.keyHash, keyHash)) match = found;
    if (!match) throw new AuthenticationError('The API key is not valid');
    // A key a non-administrator made acts within the grants the application had then.
    return { caller: withinBoundGrants(match.application, match.key.grants) };
  }
}
