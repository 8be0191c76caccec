import { createHash } from 'node:crypto';
import { type Caller, coversGrants, holdsAnyGrant, makeCaller } from '../auth/caller.js';
import { deriveCaller } from '../auth/caller-brand.js';
import type { SessionGrants, Store, StoredToken, StoredTokenIntent } from '../storage/store.js';
import { isTokenIntentId } from '../token-intents/token-intent-id.js';
import type { RunDependencies } from './run-dependencies.js';

/**
 * A result held to be shown again later (an idempotent replay, an asynchronous run's result read
 * by its requester): what it depends on beyond itself, recorded when it is stored, and whether it
 * may still be shown. It may not once the caller lost any grant it held then (it would show what
 * the caller may no longer see), once a token it carries or that a reactor run behind it read through
 * `req.bt` changed or went away (it would show data the vault no longer holds), or once the
 * application that run acted as changed its grants (docs/authority.md).
 */
export interface HeldState {
  /** grantsDigest of the caller when the result was stored (what earlier versions decided on). */
  grants: string;
  /** The caller's grants when the result was stored: it is shown only to a caller that still holds them all (coversGrants). */
  granted?: SessionGrants;
  /** Token id → stateDigest of each token the result carries (a token intent's id: its intentDigest). */
  tokens: Record<string, string>;
  /** Token id → stateDigest of each token a reactor run behind the result read, created or changed through req.bt (RunDependencies). */
  read?: Record<string, string>;
  /** Application id → grantsDigest of each application a reactor run behind the result acted as. */
  applications?: Record<string, string>;
}

/** Why a held result may not be shown now. */
export type Stale = 'grants' | 'application' | 'carried' | 'read';

/**
 * A token's state as a held result depends on it: its containers and mask (how much of it a caller
 * sees) and its ciphertext (its data: every update and re-encryption writes a new one).
 */
function stateDigest(token: StoredToken): string {
  return createHash('sha256')
    .update(JSON.stringify([[...token.containers].sort(), token.mask ?? null]))
    .update(token.ciphertext)
    .digest('hex');
}

/** The digest prefix that marks a followed id as a token intent's (intents never change: the digest names one). */
const INTENT_DIGEST = 'token-intent:';

function intentDigest(intent: StoredTokenIntent): string {
  return INTENT_DIGEST + createHash('sha256').update(intent.sealed).digest('hex');
}

/** What a caller is allowed, canonically: rule descriptions and permission order do not count. */
export function grantsDigest(caller: Caller): string {
  const rules = caller.rules.map((rule) => [rule.priority, rule.container, rule.transform, [...rule.permissions].sort()]);
  return createHash('sha256')
    .update(JSON.stringify([caller.applicationType, [...caller.permissions].sort(), rules]))
    .digest('hex');
}

/** Tokens followed for a held result: ids to withdraw it with, and the state digests of the live ones. */
interface Followed {
  tokenIds: string[];
  tokens: Record<string, string>;
}

export class HeldResults {
  #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /**
   * The state a result of `caller` depends on now: the tokens `carried` names, and what the run's
   * `dependencies` recorded. `tokenIds`: the tokens whose deletion withdraws it.
   */
  async hold(caller: Caller, carried: Iterable<string>, dependencies: RunDependencies | null, now: number): Promise<{ state: HeldState; tokenIds: string[] }> {
    const own = await this.#followed(caller, carried, now);
    const read: Followed = { tokenIds: [], tokens: {} };
    const applications: Record<string, string> = {};
    if (dependencies !== null) {
      for (const [reader, ids] of dependencies.reads) {
        const followed = await this.#followed(reader, ids, now);
        read.tokenIds.push(...followed.tokenIds);
        Object.assign(read.tokens, followed.tokens);
      }
      for (const [id, application] of dependencies.applications) applications[id] = grantsDigest(makeCaller(application));
    }
    const granted = { permissions: [...caller.permissions], rules: [...caller.rules] };
    const state: HeldState = { grants: grantsDigest(caller), granted, tokens: own.tokens, read: read.tokens, applications };
    return { state, tokenIds: [...new Set([...own.tokenIds, ...read.tokenIds])] };
  }

  /** Why the held result may not be shown to `caller` now, or null when it may. */
  async stale(caller: Caller, state: HeldState, now: number): Promise<Stale | null> {
    // Explicit rules: an empty list is no grant (not makeCaller's implicit ones).
    const then: Caller | null = state.granted ? deriveCaller(caller, state.granted) : null;
    if (then ? !coversGrants(caller, then) : state.grants !== grantsDigest(caller)) return 'grants';
    for (const [id, digest] of Object.entries(state.applications ?? {})) {
      const application = await this.#store.getApplication(caller.tenantId, id);
      if (application === null || grantsDigest(makeCaller(application)) !== digest) return 'application';
    }
    if (!(await this.#unchanged(caller.tenantId, state.tokens, now))) return 'carried';
    if (!(await this.#unchanged(caller.tenantId, state.read ?? {}, now))) return 'read';
    return null;
  }

  /** Whether every token (or token intent) of `digests` is live and in the state its digest records. */
  async #unchanged(tenantId: string, digests: Record<string, string>, now: number): Promise<boolean> {
    for (const [id, digest] of Object.entries(digests)) {
      if (digest.startsWith(INTENT_DIGEST)) {
        const intent = await this.#store.getTokenIntent(tenantId, id, now);
        if (intent === null || intentDigest(intent) !== digest) return false;
        continue;
      }
      const token = await this.#store.getToken(tenantId, id, now);
      if (token === null || stateDigest(token) !== digest) return false;
    }
    return true;
  }

  /**
   * The tokens a result depends on, as followed: `tokens` the state digest of each live token of
   * the tenant among `ids`, `tokenIds` those to withdraw the result with. A token `reader` holds no
   * grant on is neither (the reader is the caller, or for the tokens a reactor read through req.bt
   * the application it acted as): an id the caller wrote into its own data (metadata `{ id }`) must
   * not let it watch, through the result, a token it cannot see. Ids naming no live token stay in
   * `tokenIds` (one deleted during the run withdraws the result at once).
   */
  async #followed(reader: Caller, ids: Iterable<string>, now: number): Promise<Followed> {
    const tokenIds: string[] = [];
    const tokens: Record<string, string> = {};
    for (const id of new Set(ids)) {
      if (isTokenIntentId(id)) {
        // An id of a token intent a run detokenized (docs/token-intents.md): followed until it is
        // converted, deleted or expires, after which the vault no longer holds that data.
        tokenIds.push(id);
        const intent = await this.#store.getTokenIntent(reader.tenantId, id, now);
        if (intent !== null) tokens[id] = intentDigest(intent);
        continue;
      }
      const token = await this.#store.getToken(reader.tenantId, id, now);
      if (token !== null && !holdsAnyGrant(reader, token.containers)) continue;
      tokenIds.push(id);
      if (token !== null) tokens[id] = stateDigest(token);
    }
    return { tokenIds, tokens };
  }
}
