import type { Clock } from '../common/clock.js';
import { runEvery } from '../common/run-every.js';
import { formatIso } from '../common/time.js';
import { type KeyRing, versionOf } from '../crypto/key-ring.js';
import type { Logger } from '../common/logger.js';
import type { CvcCursor, ExpiredTokenRecord, Store, StoredToken } from '../storage/store.js';
import { UnreadableRows } from './unreadable-rows.js';

export interface SweepResult {
  /** Expired tokens physically removed (a reference row stays for each). */
  expired: number;
  /** Card tokens whose cvc was removed from the stored data. */
  cvcRemoved: number;
  /** Card tokens due for cvc removal whose stored data could not be opened (damaged): counted, logged and skipped. */
  cvcUnreadable: number;
  /** Idempotency records past their expiry (stored responses after 24 hours, abandoned claims after their lease). */
  idempotencyKeysRemoved: number;
  /** Asynchronous reactor runs whose result passed its 24 hours. */
  reactorResultsRemoved: number;
  /** Sessions past their expiry (they stopped authenticating then). */
  sessionsRemoved: number;
  /** Token intents past their expiry (docs/token-intents.md), their sealed data with them. */
  tokenIntentsRemoved: number;
  /** Webhook deliveries finished more than 7 days ago, their sealed bodies with them. */
  deliveriesRemoved: number;
  /** Audit entries past the audit retention, removed behind a checkpoint (docs/audit.md). */
  auditEntriesRemoved: number;
}

/**
 * What the sweep does, each concern on its own: the background sweep runs each as its own
 * recurring job (`sweep.<concern>`), so one that fails never holds back another.
 */
export const SWEEP_CONCERNS = ['expiry', 'cvc', 'idempotency', 'reactorResults', 'sessions', 'tokenIntents', 'deliveries', 'audit'] as const;
export type SweepConcern = (typeof SWEEP_CONCERNS)[number];

/** Counters of the sweep, for metrics (`tokenvault_sweep_*`, docs/operations.md). */
export interface SweepStats {
  /** Stored rows found unreadable (each try that failed counts once; a row is tried again after an hour, then up to a day). */
  unreadableRows: number;
  /** Runs of each concern that failed (each is retried with backoff, at most one interval later). */
  failures: Record<SweepConcern, number>;
}

export interface SweeperDependencies {
  store: Store;
  keys: KeyRing;
  clock: Clock;
  logger: Logger;
  /** Hears of each batch of expired tokens after it was removed (the `token.expired` events). */
  onExpired?: (tokens: readonly ExpiredTokenRecord[]) => Promise<void>;
  /** Removes finished webhook deliveries past their retention; answers how many. */
  purgeDeliveries?: (now: number) => Promise<number>;
  /** Seals the audit chains and removes entries past the audit retention; answers how many it removed. */
  sweepAudit?: (now: number) => Promise<number>;
}

const BATCH = 500;

/**
 * Removes expired tokens, cvc values past their one-hour lifetime, expired idempotency records,
 * asynchronous reactor results past their 24 hours, expired sessions, expired token intents and
 * old webhook deliveries. Reads already ignore them from the moment they lapse; the sweep makes the
 * removal physical (and keeps the idempotency table from growing with every request). Safe to run
 * from several instances: removal is idempotent and cvc removal is compare-and-set on the ciphertext.
 * Purging a token and removing a cvc also withdraw, in the same transaction, the stored idempotent
 * responses that carry that token's data (store triggers, migration 3); replays already stop at
 * the expiry or cvc purge time recorded with the response.
 */
export class Sweeper {
  readonly #deps: SweeperDependencies;
  readonly #unreadable = new UnreadableRows();
  readonly #failures = Object.fromEntries(SWEEP_CONCERNS.map((c) => [c, 0])) as Record<SweepConcern, number>;

  constructor(deps: SweeperDependencies) {
    this.#deps = deps;
  }

  stats(): SweepStats {
    return { unreadableRows: this.#unreadable.total, failures: { ...this.#failures } };
  }

  /** Runs one concern; rejects when the store does (the concern's job retries it), counted in stats. */
  async run(concern: SweepConcern): Promise<Partial<SweepResult>> {
    let result: Partial<SweepResult>;
    try {
      result = await this.#concern(concern, this.#deps.clock.now());
    } catch (error) {
      this.#failures[concern]++;
      throw error;
    }
    if (Object.values(result).some((n) => n > 0)) this.#deps.logger.info('sweep', { concern, ...result });
    return result;
  }

  /**
   * Runs every concern, each even when another failed; then rejects with an AggregateError holding
   * each failure (its message names the concerns) if any did.
   */
  async sweepAll(): Promise<SweepResult> {
    const result: SweepResult = {
      expired: 0,
      cvcRemoved: 0,
      cvcUnreadable: 0,
      idempotencyKeysRemoved: 0,
      reactorResultsRemoved: 0,
      sessionsRemoved: 0,
      tokenIntentsRemoved: 0,
      deliveriesRemoved: 0,
      auditEntriesRemoved: 0,
    };
    const parts = await runEvery(
      SWEEP_CONCERNS.map((concern) => [concern, () => this.run(concern)] as const),
      'the sweep failed for',
    );
    return Object.assign(result, ...parts);
  }

  #concern(concern: SweepConcern, now: number): Promise<Partial<SweepResult>> {
    const { store } = this.#deps;
    switch (concern) {
      case 'expiry':
        return this.#expire(now);
      case 'cvc':
        return this.#removeCvcs(now);
      case 'idempotency':
        return drain((n) => store.purgeExpiredIdempotencyKeys(now, n)).then((idempotencyKeysRemoved) => ({ idempotencyKeysRemoved }));
      case 'reactorResults':
        return drain((n) => store.purgeExpiredReactorRequests(now, n)).then((reactorResultsRemoved) => ({ reactorResultsRemoved }));
      case 'sessions':
        return drain((n) => store.purgeExpiredSessions(now, n)).then((sessionsRemoved) => ({ sessionsRemoved }));
      case 'tokenIntents':
        return drain((n) => store.purgeExpiredTokenIntents(now, n)).then((tokenIntentsRemoved) => ({ tokenIntentsRemoved }));
      case 'deliveries':
        return (this.#deps.purgeDeliveries?.(now) ?? Promise.resolve(0)).then((deliveriesRemoved) => ({ deliveriesRemoved }));
      case 'audit':
        return (this.#deps.sweepAudit?.(now) ?? Promise.resolve(0)).then((auditEntriesRemoved) => ({ auditEntriesRemoved }));
    }
  }

  async #expire(now: number): Promise<Partial<SweepResult>> {
    let expired = 0;
    for (;;) {
      const removed = await this.#deps.store.purgeExpiredTokens(now, BATCH);
      expired += removed.length;
      await this.#deps.onExpired?.(removed);
      if (removed.length < BATCH) return { expired };
    }
  }

  /**
   * Pages through the tokens due (a cursor, so rows that stay due, damaged or set aside, never fill
   * every page) and rewrites each without its cvc. A row that cannot be opened is counted, logged
   * by tenant and id (never its data) and set aside (UnreadableRows); a store failure rejects.
   */
  async #removeCvcs(now: number): Promise<Partial<SweepResult>> {
    const { store } = this.#deps;
    let cvcRemoved = 0;
    let cvcUnreadable = 0;
    let after: CvcCursor | undefined;
    // Tenants whose keys could not be loaded in this run (their key provider refused): their rows
    // are passed over, so one tenant's keys never hold back the others' removals (its rows come
    // first in the cursor's order and stay due); the run then rejects with the first such failure.
    const keyless = new Map<string, unknown>();
    for (;;) {
      const due = await store.listCvcDue(now, BATCH, after);
      for (const token of due) {
        if (keyless.has(token.tenantId) || this.#unreadable.isSetAside(token.tenantId, token.id, now)) continue;
        let outcome: 'removed' | 'unreadable' | 'changed';
        try {
          outcome = await this.#removeCvc(token, now);
        } catch (error) {
          if (!(error instanceof KeysUnavailable)) throw error;
          keyless.set(token.tenantId, error.cause);
          continue;
        }
        if (outcome === 'removed') cvcRemoved++;
        else if (outcome === 'unreadable') cvcUnreadable++;
      }
      const last = due.at(-1);
      if (due.length < BATCH || last === undefined) break;
      after = { cvcPurgeAt: last.cvcPurgeAt!, tenantId: last.tenantId, id: last.id };
    }
    const [failure] = keyless.values();
    if (keyless.size > 0) throw failure;
    return { cvcRemoved, cvcUnreadable };
  }

  async #removeCvc(token: StoredToken, now: number): Promise<'removed' | 'unreadable' | 'changed'> {
    const { keys } = this.#deps;
    let data: Record<string, unknown>;
    try {
      data = await this.#open(token);
    } catch (error) {
      if (!(error instanceof Unreadable)) throw error;
      const retryAt = this.#unreadable.setAside(token.tenantId, token.id, now);
      this.#deps.logger.error('sweep: a stored token could not be opened; its cvc removal is skipped', {
        concern: 'cvc',
        tenantId: token.tenantId,
        tokenId: token.id,
        error: error.reason,
        retryAt: formatIso(retryAt),
      });
      return 'unreadable';
    }
    this.#unreadable.clear(token.tenantId, token.id);
    delete data.cvc;
    const tenantKeys = await keysOf(() => keys.keysFor(token.tenantId));
    const next = keys.encrypt(tenantKeys, token.tenantId, token.id, Buffer.from(JSON.stringify(data), 'utf8'));
    return (await this.#deps.store.replaceCiphertext(token.tenantId, token.id, token.ciphertext, { ...next, cvcPurgeAt: null })) ? 'removed' : 'changed';
  }

  /** The token's data; Unreadable when the stored bytes cannot be opened with the tenant's keys. */
  async #open(token: StoredToken): Promise<Record<string, unknown>> {
    const { keys } = this.#deps;
    let version: number;
    try {
      version = versionOf(token.ciphertext);
    } catch {
      throw new Unreadable('unrecognized_format');
    }
    // Outside the try that judges the row: a store or key-provider failure while loading the keys
    // is an outage (the concern is retried), not a damaged row.
    const tenantKeys = await keysOf(() => keys.keysCovering(token.tenantId, [version]));
    let plaintext: Buffer | null;
    try {
      plaintext = keys.decryptWithKeys(tenantKeys, token.tenantId, token.id, token.ciphertext);
    } catch {
      throw new Unreadable('decryption_failed');
    }
    if (plaintext === null) throw new Unreadable('unknown_key_version');
    let data: unknown;
    try {
      data = JSON.parse(plaintext.toString('utf8'));
    } catch {
      throw new Unreadable('not_json');
    }
    if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new Unreadable('not_an_object');
    return data as Record<string, unknown>;
  }
}

/** A row whose stored bytes cannot be opened; `reason` is a code or class name, never data. */
class Unreadable extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super('the stored data cannot be opened');
    this.name = 'Unreadable';
    this.reason = reason;
  }
}

/** The tenant's keys could not be loaded (the store or the key provider failed): `cause` is that failure. */
class KeysUnavailable extends Error {
  constructor(cause: unknown) {
    super("the tenant's keys could not be loaded", { cause });
    this.name = 'KeysUnavailable';
  }
}

async function keysOf<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw new KeysUnavailable(error);
  }
}

/** Calls a batch purge until it removes less than a full batch; answers the total. */
async function drain(purge: (limit: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const removed = await purge(BATCH);
    total += removed;
    if (removed < BATCH) return total;
  }
}
