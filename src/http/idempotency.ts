import { createHash } from 'node:crypto';
import type { Caller } from '../caller.js';
import type { Clock } from '../clock.js';
import { ConflictError, UnprocessableError, ValidationError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { IdempotencyClaim, Store } from '../storage/store.js';

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
 */
export async function runIdempotent(
  deps: { store: Store; clock: Clock; logger: Logger; leaseMs: number },
  caller: Caller,
  key: string,
  hash: string,
  run: () => Promise<SerializedResponse>,
): Promise<SerializedResponse> {
  const { store, clock, logger, leaseMs } = deps;
  const now = clock.now();
  const claimed: IdempotencyClaim = { tenantId: caller.tenantId, applicationId: caller.applicationId, key, claimedAt: now };
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
    if (existing.state === 'in_flight' || existing.status === null) {
      throw new ConflictError('A request with this idempotency key is still in progress');
    }
    return { status: existing.status, text: existing.body === '' ? null : existing.body, replayed: true };
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
      await store.completeIdempotencyKey(claimed, { status: response.status, body: response.text ?? '', expiresAt: clock.now() + IDEMPOTENCY_TTL_MS });
    } catch (error) {
      logger.error('could not store an idempotent response', { error: (error as Error).name });
      await release(store, claimed, logger);
    }
  } else {
    await release(store, claimed, logger);
  }
  return response;
}

async function release(store: Store, claim: IdempotencyClaim, logger: Logger): Promise<void> {
  try {
    await store.releaseIdempotencyKey(claim);
  } catch (error) {
    // The key then stays claimed until it expires; the original error is what the client needs.
    logger.error('could not release an idempotency key', { error: (error as Error).name });
  }
}
