import { createHash } from 'node:crypto';
import type { Caller } from '../caller.js';
import type { Clock } from '../clock.js';
import { ConflictError, UnprocessableError, ValidationError } from '../errors.js';
import type { Logger } from '../logger.js';
import { planDetokenize } from '../reactors/detokenize.js';
import type { IdempotencyClaim, Store } from '../storage/store.js';
import type { VaultKeys } from '../vault.js';
import { refuseNul } from '../validation/no-nul.js';

/** How long a stored response is replayed. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** Default lease of an in-flight claim (createFetchHandler option `idempotencyLeaseMs`). */
export const DEFAULT_IDEMPOTENCY_LEASE_MS = 5 * 60 * 1000;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** A finished response as the handler serializes it: the status and the exact JSON text (null: no body). */
export interface SerializedResponse {
  status: number;
  text: string | null;
  /** Set on a replay of a stored response. */
  replayed?: boolean;
  /** Ids of the tokens whose data the response may carry (see referencedTokenIds). */
  tokenIds?: readonly string[];
}

/** Deepest nesting walked for ids in a response (responses are the vault's own JSON). */
const MAX_ID_DEPTH = 64;

/**
 * The tokens whose data a response of a route may carry, so the stored response can be withdrawn
 * when one of them is deleted, expires or loses its cvc:
 * - token routes (`/tokens…`, `/tokenize`): every `id` in the response (the token read, updated,
 *   created or found) and the path's token id;
 * - reactor invocations (`/reactors/{id}/react`): the tokens named by `{{ id }}` expressions in the
 *   request's args (their data is what the reactor received) and every `id` in the response (the
 *   tokens the run created);
 * - other routes carry no token data: none.
 * Over-inclusion costs nothing: ids that name no token are ignored by the store.
 */
export function referencedTokenIds(routePath: string, params: Record<string, string>, body: unknown, result: unknown): string[] {
  const isReact = routePath === '/reactors/{id}/react';
  if (routePath === '/detokenize') {
    // The response is the body with the data of the tokens it names: follow those tokens.
    try {
      return [...planDetokenize(body, 'body').ids.keys()];
    } catch {
      return [];
    }
  }
  if (!isReact && !routePath.startsWith('/tokens') && routePath !== '/tokenize') return [];
  const ids = new Set<string>();
  collectIds(result, ids, 0);
  if (!isReact && params['id'] !== undefined) ids.add(params['id']);
  if (isReact && typeof body === 'object' && body !== null) {
    try {
      for (const id of planDetokenize((body as { args?: unknown }).args).ids.keys()) ids.add(id);
    } catch {
      // The invocation validated its args already; args it refused ran nothing.
    }
  }
  return [...ids];
}

function collectIds(value: unknown, ids: Set<string>, depth: number): void {
  if (depth > MAX_ID_DEPTH || typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) collectIds(item, ids, depth + 1);
    return;
  }
  for (const [key, item] of Object.entries(value)) {
    if (key === 'id' && typeof item === 'string') ids.add(item);
    else collectIds(item, ids, depth + 1);
  }
}

/** The request hash: the same key with another method, path or body is another request (422). */
export function requestHash(method: string, path: string, body: string | null): string {
  return createHash('sha256').update(`${method}\n${path}\n`).update(body ?? '').digest('hex');
}

/** Checks an Idempotency-Key header value: 1 to 255 characters. */
export function checkIdempotencyKey(value: string, headerName: string): string {
  if (value.length === 0 || value.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw ValidationError.field(headerName, `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  }
  refuseNul(value, headerName);
  return value;
}

/**
 * Runs a mutating request at most once per (tenant, application, key). The key is claimed atomically
 * in the store; the first successful (2xx) response is stored and replayed for 24 hours (by the vault
 * clock). The same key with a different request is a 422; while the first request is still running
 * it is a 409. An error response releases the key, so the client may retry with it.
 *
 * A claim is a lease (`leaseMs`): if the process running the request dies, the key becomes usable
 * again when the lease runs out instead of answering 409 for a day. The claim's time names it in
 * complete and release, so a request that outlived its lease cannot overwrite or drop a newer claim.
 *
 * Stored responses are encrypted with the tenant's data key, bound to tenant, application and key
 * (a row moved to another key, application or tenant does not decrypt). A stored response carrying
 * a token's data is withdrawn when that token is deleted, expires or loses its cvc: the key then
 * answers 409 until its 24 hours are over rather than replaying data that no longer exists, and
 * rather than running the request again (a retried create would make a second token the client
 * never asked for).
 */
export async function runIdempotent(
  deps: { store: Store; clock: Clock; logger: Logger; leaseMs: number; keys: Pick<VaultKeys, 'sealRecord' | 'openRecord'> },
  caller: Caller,
  key: string,
  hash: string,
  run: () => Promise<SerializedResponse>,
): Promise<SerializedResponse> {
  const { store, clock, logger, leaseMs, keys } = deps;
  const now = clock.now();
  const claimed: IdempotencyClaim = { tenantId: caller.tenantId, applicationId: caller.applicationId, key, claimedAt: now };
  const context = ['idempotency', caller.applicationId, key];
  const claim = await store.claimIdempotencyKey(
    {
      tenantId: caller.tenantId,
      applicationId: caller.applicationId,
      key,
      requestHash: hash,
      state: 'in_flight',
      status: null,
      body: null,
      createdAt: now,
      expiresAt: now + leaseMs,
    },
    now,
  );
  if (!claim.claimed) {
    const existing = claim.existing;
    if (existing.requestHash !== hash) throw new UnprocessableError('The idempotency key was already used with a different request');
    if (existing.state === 'withdrawn' || (existing.state === 'done' && existing.withdrawAt != null && existing.withdrawAt <= now)) {
      throw new ConflictError(
        'The response stored for this idempotency key was withdrawn because a token it carried was deleted, expired or lost its cvc; send the request with a new key',
      );
    }
    if (existing.state === 'in_flight' || existing.status === null) {
      throw new ConflictError('A request with this idempotency key is still in progress');
    }
    const text = existing.body === null ? null : (await keys.openRecord(caller.tenantId, context, existing.body)).toString('utf8');
    return { status: existing.status, text, replayed: true };
  }
  let response: SerializedResponse;
  try {
    response = await run();
  } catch (error) {
    await release(store, claimed, logger);
    throw error;
  }
  if (response.status >= 200 && response.status < 300) {
    try {
      const body = response.text === null ? null : await keys.sealRecord(caller.tenantId, context, Buffer.from(response.text, 'utf8'));
      await store.completeIdempotencyKey(claimed, {
        status: response.status,
        body,
        expiresAt: clock.now() + IDEMPOTENCY_TTL_MS,
        tokenIds: response.tokenIds ?? [],
      });
    } catch (error) {
      logger.error('could not store an idempotent response', { error: (error as Error).name });
      await release(store, claimed, logger);
    }
  } else {
    await release(store, claimed, logger);
  }
  return { status: response.status, text: response.text };
}

async function release(store: Store, claim: IdempotencyClaim, logger: Logger): Promise<void> {
  try {
    await store.releaseIdempotencyKey(claim);
  } catch (error) {
    // The key then stays claimed until it expires; the original error is what the client needs.
    logger.error('could not release an idempotency key', { error: (error as Error).name });
  }
}
