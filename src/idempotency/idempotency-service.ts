import { createHash } from 'node:crypto';
import type { Caller } from '../auth/caller.js';
import type { Clock } from '../common/clock.js';
import type { KeyRing } from '../crypto/key-ring.js';
import { ConflictError, UnprocessableError, ValidationError } from '../errors/errors.js';
import type { Logger } from '../common/logger.js';
import type { IdempotencyClaim, IdempotencyRecord, Store } from '../storage/store.js';
import { refuseNul } from '../validation/no-nul.js';
import { type HeldState, HeldResults } from './held-result.js';
import { RunDependencies, trackRunDependencies } from './run-dependencies.js';

/** How long a result is replayed. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** Default lease of an in-flight claim. */
export const DEFAULT_IDEMPOTENCY_LEASE_MS = 5 * 60 * 1000;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** One request made idempotent. */
export interface IdempotentRequest<T> {
  /** The client's idempotency key: 1 to 255 characters, per application. */
  key: string;
  /** How errors name the key (default `key`; the HTTP layer names its header). */
  keyName?: string;
  /**
   * Text naming the request (HTTP: method, path with query, and body). The same key with another
   * fingerprint is a 422: a key names one request.
   */
  fingerprint: string;
  /**
   * The tokens whose data the result may carry: the stored result is withdrawn when one of them is
   * deleted, expires or loses its cvc. Default: every `id` in the result. Over-inclusion costs
   * nothing (ids that name no token of the tenant are ignored).
   */
  tokenIds?: (result: T) => readonly string[];
  /**
   * How long the key stays claimed while the request runs (ms, default 5 minutes, 1 s to 24 h):
   * should the process die, the key is usable again after it. Keep it above the longest run (a
   * reactor's time limit): a retry after the lease runs the request again.
   */
  leaseMs?: number;
}

export interface IdempotentResult<T> {
  /** The result of the run, or the stored result of an earlier one (a JSON copy). */
  result: T;
  /** True when the result is an earlier run's, replayed. */
  replayed: boolean;
  /**
   * False when the run succeeded but its result could not be stored: the key stays claimed and a
   * retry with it answers 409 (never runs again) instead of replaying this result. Absent otherwise.
   */
  stored?: false;
}

/** Deepest nesting walked for ids in a result (results are the vault's own JSON). */
const MAX_ID_DEPTH = 64;

/** Every `id` string in a JSON value: the default `tokenIds`. */
export function idsIn(value: unknown, ids: Set<string> = new Set(), depth = 0): Set<string> {
  if (depth > MAX_ID_DEPTH || typeof value !== 'object' || value === null) return ids;
  if (Array.isArray(value)) {
    for (const item of value) idsIn(item, ids, depth + 1);
    return ids;
  }
  for (const [key, item] of Object.entries(value)) {
    if (key === 'id' && typeof item === 'string') ids.add(item);
    else idsIn(item, ids, depth + 1);
  }
  return ids;
}

/**
 * Checks an idempotency key of `caller`: 1 to 255 characters of text the stores hold alike, from a
 * caller with a key of its own. A public application's key is shared by every browser that loads
 * it, so its keys would be one namespace for all of them: anyone holding the public key could take
 * another user's stored response (a session key, a token id) or test guesses of its body against
 * it. Public applications use sessions for that (a session is its own caller). `field` names the
 * key in the error (e.g. the HTTP header).
 */
function checkIdempotencyKey(value: unknown, field: string, caller: Caller): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw ValidationError.field(field, `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  }
  refuseNul(value, field);
  if (caller.applicationType === 'public' && caller.session === undefined) {
    throw ValidationError.field(
      field,
      "is not accepted with a public application's key: every client holding that key would share the stored responses; send the request with a session key or from a private application",
    );
  }
  return value;
}

/** What the store keeps of a fingerprint: its SHA-256, never the request itself (it may hold token data). */
export function fingerprintHash(fingerprint: string): string {
  return createHash('sha256').update(fingerprint).digest('hex');
}

/** A completed run's record carries this status (the store's column predates this service, when it held the HTTP status). */
const COMPLETED = 200;
/**
 * The status of a record whose run succeeded but whose result could not be stored: done, without a
 * body. The key answers 409 until it expires rather than running the request again (its side
 * effect, a reactor's charge say, happened).
 */
const UNSTORED = 0;
/** Unstored marks kept to write again when the store could not take them either (see #unmarked). */
const MAX_UNMARKED = 1000;
/**
 * Marks the sealed envelope `{ tokenvault_idempotent: 2, grants, tokens, read?, applications?, result }`
 * (earlier versions sealed the bare response; envelopes stored before `read` and `applications`
 * existed replay as if both were empty).
 */
const ENVELOPE = 'tokenvault_idempotent';

/** Why a replay is refused, by what changed since the run (HeldResults.stale). */
const STALE = {
  grants: "This application's permissions or access rules changed since the request with this idempotency key ran",
  application: 'The application a reactor ran as for this idempotency key (its req.bt) was deleted or its permissions or access rules changed since',
  carried: 'A token the response for this idempotency key carried was changed, deleted or expired since',
  read: 'A token the reactor run behind this idempotency key read, created or changed through req.bt was changed, deleted or expired since',
} as const;

/** What a stored result is replayed under: the state it depends on (held-result.ts), and the result. */
interface Envelope extends HeldState {
  result: unknown;
}

/**
 * Runs a mutating call at most once per (tenant, application, key), for the HTTP layer's
 * `<PREFIX>-IDEMPOTENCY-KEY` and for in-process callers alike. The key is claimed atomically in the
 * store; the first successful result is stored and replayed for 24 hours (by the vault clock). The
 * same key with another request is a 422; while the first run is still going it is a 409. A run
 * that throws releases the key, so the client may retry with it. A run that succeeded but whose
 * result could not be stored keeps the key: it answers 409 until it expires (docs/http-api.md).
 *
 * A claim is a lease: if the process running the request dies, the key becomes usable again when
 * the lease runs out instead of answering 409 for a day. The claim's time names it in complete and
 * release, so a run that outlived its lease cannot overwrite or drop a newer claim.
 *
 * Stored results are encrypted with the tenant's data key, bound to tenant, application and key
 * (a row moved to another key, application or tenant does not decrypt). A stored result carrying a
 * token's data is withdrawn when that token is deleted, expires or loses its cvc: the key then
 * answers 409 until its 24 hours are over rather than replaying data that no longer exists, and
 * rather than running again (a retried create would make a second token the client never asked for).
 * Likewise a caller whose grants changed since the run (permissions or access rules), or a result
 * carrying a token changed since (data, containers, mask), gets a 409, not the stored result: a
 * replay never shows more than the caller may see now, nor data the vault no longer holds.
 *
 * A reactor's output may carry data of tokens it does not name: those its code read through
 * `req.bt` as the reactor's application. The run reports them while it runs (RunDependencies), and
 * they are followed as carried tokens are (withdrawal, and a 409 when changed), together with the
 * grants of the application it acted as: a replay after that application lost a grant is a 409 too.
 */
export class IdempotencyService {
  #store: Store;
  #clock: Clock;
  #logger: Logger;
  #records: Pick<KeyRing, 'sealRecord' | 'openRecord'>;
  #held: HeldResults;
  /**
   * Claims whose run succeeded but whose result and UNSTORED mark both failed to be written (the
   * store was down): their records are still the in-flight claims written before the run, so the
   * mark is written again before each later run of this service, until one lands.
   */
  #unmarked = new Map<string, { claim: IdempotencyClaim; expiresAt: number }>();

  constructor(deps: { store: Store; clock: Clock; logger: Logger; records: Pick<KeyRing, 'sealRecord' | 'openRecord'> }) {
    this.#held = new HeldResults(deps.store);
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#records = deps.records;
  }

  /**
   * Runs `run` unless this caller already ran a request with `request.key`; the result must be JSON
   * (what every service returns).
   * @example
   * const { result: token } = await vault.idempotency.run(caller, { key: orderId, fingerprint: JSON.stringify(input) }, () => vault.tokens.create(caller, input));
   */
  async run<T>(caller: Caller, request: IdempotentRequest<T>, run: () => Promise<T>): Promise<IdempotentResult<T>> {
    const key = checkIdempotencyKey(request.key, request.keyName ?? 'key', caller);
    if (typeof request.fingerprint !== 'string') throw ValidationError.field('fingerprint', 'must be a string naming the request');
    const leaseMs = request.leaseMs ?? DEFAULT_IDEMPOTENCY_LEASE_MS;
    if (!Number.isInteger(leaseMs) || leaseMs < 1000 || leaseMs > IDEMPOTENCY_TTL_MS)
      throw ValidationError.field('leaseMs', 'must be a whole number of milliseconds from 1000 to 24 hours');
    const hash = fingerprintHash(request.fingerprint);
    await this.#writeUnmarked();
    const now = this.#clock.now();
    const claimed: IdempotencyClaim = { tenantId: caller.tenantId, applicationId: caller.applicationId, key, claimedAt: now };
    const context = ['idempotency', caller.applicationId, key];
    const claim = await this.#store.claimIdempotencyKey(
      { ...claimed, requestHash: hash, state: 'in_flight', status: null, body: null, createdAt: now, expiresAt: now + leaseMs },
      now,
    );
    if (!claim.claimed) {
      return { result: await this.#replay<T>(caller, claim.existing, hash, context, now), replayed: true };
    }
    const dependencies = new RunDependencies();
    let result: T;
    try {
      result = await trackRunDependencies(dependencies, run);
    } catch (error) {
      await this.#release(claimed);
      throw error;
    } finally {
      dependencies.close();
    }
    const completedAt = this.#clock.now();
    try {
      const carried = request.tokenIds ? request.tokenIds(result) : idsIn(result);
      const { state, tokenIds } = await this.#held.hold(caller, carried, dependencies, completedAt);
      const envelope: Envelope = { ...state, result };
      await this.#store.completeIdempotencyKey(claimed, {
        status: COMPLETED,
        body: await this.#records.sealRecord(caller.tenantId, context, Buffer.from(JSON.stringify({ [ENVELOPE]: 2, ...envelope }), 'utf8')),
        expiresAt: completedAt + IDEMPOTENCY_TTL_MS,
        tokenIds,
      });
    } catch (error) {
      // The run succeeded, so its side effect happened: the result is what this caller needs, and
      // the key must not run again. Releasing it would let a retry repeat the side effect.
      this.#logger.error('could not store an idempotent response; its key answers 409 instead of replaying it', {
        error: (error as Error).name,
        applicationId: caller.applicationId,
      });
      await this.#markUnstored(claimed, completedAt + IDEMPOTENCY_TTL_MS);
      return { result, replayed: false, stored: false };
    }
    return { result, replayed: false };
  }

  /**
   * Marks a claim's record done without a result (UNSTORED) until `expiresAt`. When the store
   * cannot take that either, the record stays the in-flight claim (a retry answers 409 while its
   * lease lasts) and the mark is kept to write again before the next run.
   */
  async #markUnstored(claim: IdempotencyClaim, expiresAt: number): Promise<void> {
    try {
      await this.#store.completeIdempotencyKey(claim, { status: UNSTORED, body: null, expiresAt, tokenIds: [] });
    } catch (error) {
      this.#logger.error('could not mark an idempotency key whose response was not stored; the mark is written again before the next idempotent request', {
        error: (error as Error).name,
      });
      if (this.#unmarked.size >= MAX_UNMARKED) {
        const [oldest] = this.#unmarked.keys();
        if (oldest !== undefined) this.#unmarked.delete(oldest);
        this.#logger.error('too many idempotency keys wait for their mark; the oldest is dropped and is usable again once its lease ends');
      }
      this.#unmarked.set(JSON.stringify([claim.tenantId, claim.applicationId, claim.key, claim.claimedAt]), { claim, expiresAt });
    }
  }

  /**
   * Writes the marks kept by #markUnstored, oldest first, stopping at the first the store still
   * refuses. A mark changes only its own claim still in flight: once the lease ran out and another
   * request claimed the key, or the sweep removed it, it changes nothing.
   */
  async #writeUnmarked(): Promise<void> {
    for (const [id, { claim, expiresAt }] of this.#unmarked) {
      try {
        await this.#store.completeIdempotencyKey(claim, { status: UNSTORED, body: null, expiresAt, tokenIds: [] });
        this.#unmarked.delete(id);
      } catch {
        return; // still down: this run will most likely answer 503 itself; the marks wait for the next.
      }
    }
  }

  /** The stored result of an earlier run with this key, if it may be replayed to `caller` now; otherwise the error saying why not. */
  async #replay<T>(caller: Caller, existing: IdempotencyRecord, hash: string, context: string[], now: number): Promise<T> {
    if (existing.requestHash !== hash) throw new UnprocessableError('The idempotency key was already used with a different request');
    if (existing.state === 'withdrawn' || (existing.state === 'done' && existing.withdrawAt != null && existing.withdrawAt <= now)) {
      throw new ConflictError(
        'The response stored for this idempotency key was withdrawn because a token it carried (or a reactor run behind it read through req.bt) was deleted, expired or lost its cvc; send the request with a new key',
      );
    }
    if (existing.state === 'in_flight') throw new ConflictError('A request with this idempotency key is still in progress');
    if (existing.status === UNSTORED) {
      throw new ConflictError(
        'The first request with this idempotency key ran, but its response could not be stored, so it is neither replayed nor run again; check its outcome and send any new request with a new key',
      );
    }
    const stored = existing.body === null ? null : (JSON.parse((await this.#records.openRecord(caller.tenantId, context, existing.body)).toString('utf8')) as unknown);
    if (!isEnvelope(stored)) throw new ConflictError('The response for this idempotency key was stored by an earlier version and is not replayed; send the request with a new key');
    const stale = await this.#held.stale(caller, stored, now);
    if (stale !== null) throw new ConflictError(`${STALE[stale]}, so the response is not replayed; send the request with a new key`);
    return stored.result as T;
  }

  async #release(claim: IdempotencyClaim): Promise<void> {
    try {
      await this.#store.releaseIdempotencyKey(claim);
    } catch (error) {
      // The key then stays claimed until its lease ends; the original error is what the client needs.
      this.#logger.error('could not release an idempotency key', { error: (error as Error).name });
    }
  }
}

function isEnvelope(value: unknown): value is Envelope {
  return typeof value === 'object' && value !== null && (value as Record<string, unknown>)[ENVELOPE] === 2;
}
