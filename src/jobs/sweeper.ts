import type { Clock } from '../common/clock.js';
import type { KeyRing } from '../crypto/key-ring.js';
import type { Logger } from '../common/logger.js';
import type { ExpiredTokenRecord, Store } from '../storage/store.js';

export interface SweepResult {
  /** Expired tokens physically removed (a reference row stays for each). */
  expired: number;
  /** Card tokens whose cvc was removed from the stored data. */
  cvcRemoved: number;
  /** Idempotency records past their expiry (stored responses after 24 hours, abandoned claims after their lease). */
  idempotencyKeysRemoved: number;
  /** Asynchronous reactor runs whose result passed its 24 hours. */
  reactorResultsRemoved: number;
  /** Sessions past their expiry (they stopped authenticating then). */
  sessionsRemoved: number;
  /** Token intents past their expiry (docs/token-intents.md), their sealed data with them. */
  tokenIntentsRemoved: number;
}

const BATCH = 500;

/**
 * `onExpired` hears of each batch of expired tokens after it was removed (the `token.expired` events).
 * Removes expired tokens, cvc values past their one-hour lifetime, expired idempotency records,
 * asynchronous reactor results past their 24 hours, expired sessions and expired token intents.
 * Reads already ignore them from the moment they lapse; the sweep makes the removal physical
 * (and keeps the idempotency table from growing with every request). Safe to run from several
 * instances: removal is idempotent and cvc removal is compare-and-set on the ciphertext.
 * Purging a token and removing a cvc also withdraw, in the same transaction, the stored idempotent
 * responses that carry that token's data (store triggers, migration 3); replays already stop at
 * the expiry or cvc purge time recorded with the response.
 */
export async function sweep(
  store: Store,
  keys: KeyRing,
  clock: Clock,
  logger: Logger,
  onExpired?: (tokens: readonly ExpiredTokenRecord[]) => Promise<void>,
): Promise<SweepResult> {
  const now = clock.now();
  let expired = 0;
  for (;;) {
    const removed = await store.purgeExpiredTokens(now, BATCH);
    expired += removed.length;
    await onExpired?.(removed);
    if (removed.length < BATCH) break;
  }
  let cvcRemoved = 0;
  for (;;) {
    const due = await store.listCvcDue(now, BATCH);
    for (const token of due) {
      const data = JSON.parse((await keys.decrypt(token.tenantId, token.id, token.ciphertext)).toString('utf8')) as Record<string, unknown>;
      delete data.cvc;
      const tenantKeys = await keys.keysFor(token.tenantId);
      const next = keys.encrypt(tenantKeys, token.tenantId, token.id, Buffer.from(JSON.stringify(data), 'utf8'));
      if (await store.replaceCiphertext(token.tenantId, token.id, token.ciphertext, { ...next, cvcPurgeAt: null })) cvcRemoved++;
    }
    if (due.length < BATCH) break;
  }
  let idempotencyKeysRemoved = 0;
  for (;;) {
    const removed = await store.purgeExpiredIdempotencyKeys(now, BATCH);
    idempotencyKeysRemoved += removed;
    if (removed < BATCH) break;
  }
  let reactorResultsRemoved = 0;
  for (;;) {
    const removed = await store.purgeExpiredReactorRequests(now, BATCH);
    reactorResultsRemoved += removed;
    if (removed < BATCH) break;
  }
  let sessionsRemoved = 0;
  for (;;) {
    const removed = await store.purgeExpiredSessions(now, BATCH);
    sessionsRemoved += removed;
    if (removed < BATCH) break;
  }
  let tokenIntentsRemoved = 0;
  for (;;) {
    const removed = await store.purgeExpiredTokenIntents(now, BATCH);
    tokenIntentsRemoved += removed;
    if (removed < BATCH) break;
  }
  const result = { expired, cvcRemoved, idempotencyKeysRemoved, reactorResultsRemoved, sessionsRemoved, tokenIntentsRemoved };
  if (Object.values(result).some((n) => n > 0)) logger.info('sweep', result);
  return result;
}
