import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { ValidationError, VaultError } from '../errors/errors.js';
import type { AuditEntry, AuditSealer, Store } from '../storage/store.js';
import { chainSealer } from './audit-chain.js';

/** The tenant's audit MAC key (the key ring's, docs/audit.md). */
export type AuditKeySource = (tenantId: string) => Promise<Buffer>;

export interface AuditRecordInput {
  tenantId: string;
  actor: string;
  operation: string;
  resourceId: string | null;
  outcome: 'success' | 'failure';
  detail?: string | null;
}

/**
 * The audit trail. Writes (create, update, delete) put their entry in the same transaction as the
 * change, through the store. Reads and failures are queued here and appended in batches, so a read
 * does not pay for its own fsync (at synchronous=FULL that would cost more than the read itself);
 * the queue is flushed every `flushMs`, at `maxBatch` entries, and on close. A process killed
 * between flushes loses at most that window of read entries; writes are never lost.
 *
 * A batch whose flush failed (the database unreachable, locked, restarting) goes back to the head
 * of the queue, is logged and counted (`stats().flushFailures`), and is retried on the next flush,
 * in order. The queue is bounded (`maxQueued`, default 10,000 entries): in an outage longer than
 * that, the oldest entries are dropped, logged and counted (`stats().droppedEntries`). A batch the
 * store refuses as invalid (a ValidationError, which no retry would store) is dropped and counted.
 *
 * Given the tenants' MAC keys (`auditKey`), every flush seals what it writes into the tenants'
 * chains, and seals the entries that token writes put in their transactions (entry()) since the last
 * flush (docs/audit.md).
 */
export class AuditLog {
  #store: Store;
  #clock: Clock;
  #logger: Logger;
  #queue: AuditEntry[] = [];
  #timer: NodeJS.Timeout | null = null;
  #flushMs: number;
  #maxBatch: number;
  #flushing: Promise<void> = Promise.resolve();
  #maxQueued: number;
  #flushFailures = 0;
  #droppedEntries = 0;
  /** Set by a failed flush until one succeeds: a full queue then waits for the retry timer. */
  #backingOff = false;
  /** Set by close(): the store is about to close, so later entries cannot be stored. */
  #closed = false;
  readonly #auditKey: AuditKeySource | undefined;
  /** Tenants whose entries token transactions wrote unsealed, and committed, since the last flush. */
  #unsealed = new Set<string>();

  constructor(store: Store, clock: Clock, logger: Logger, options: { flushMs?: number; maxBatch?: number; maxQueued?: number; auditKey?: AuditKeySource } = {}) {
    this.#store = store;
    this.#auditKey = options.auditKey;
    this.#clock = clock;
    this.#logger = logger;
    this.#flushMs = options.flushMs ?? 50;
    this.#maxBatch = options.maxBatch ?? 500;
    this.#maxQueued = options.maxQueued ?? 10_000;
  }

  /**
   * Counters for metrics: entries waiting, flushes that failed (their entries were kept), and
   * entries dropped (queue full in a long outage, or refused by the store as invalid).
   */
  stats(): { queued: number; flushFailures: number; droppedEntries: number } {
    return { queued: this.#queue.length, flushFailures: this.#flushFailures, droppedEntries: this.#droppedEntries };
  }

  /**
   * An entry stamped with the clock, for a store call that writes it atomically with its change.
   * The caller reports the commit with committed(): only then can a flush see the entry to seal it.
   */
  entry(input: AuditRecordInput): AuditEntry {
    // Spelled out rather than spread: this runs on every token operation.
    return {
      tenantId: input.tenantId,
      actor: input.actor,
      operation: input.operation,
      resourceId: input.resourceId,
      outcome: input.outcome,
      detail: input.detail ?? null,
      at: this.#clock.now(),
    };
  }

  /**
   * Marks the tenant of `entry` (from entry()) for the next flush to seal, once the transaction
   * that wrote it committed. Marked before the commit, a flush could take the tenant while the
   * entry is not visible yet and leave it unsealed until the sweep. Harmless when the
   * transaction wrote nothing (that flush finds nothing to seal).
   */
  committed(entry: AuditEntry): void {
    if (this.#auditKey === undefined || this.#closed) return;
    this.#unsealed.add(entry.tenantId);
    this.#schedule();
  }

  /** Queues an entry for the next batch. */
  record(input: AuditRecordInput): void {
    // Work that outlived the vault (a reactor run past the shutdown grace) ends after the store
    // closed: its entry is reported once, not retried against a closed store forever.
    if (this.#closed) {
      this.#drop(1, 'audit entry dropped: recorded after the vault closed');
      return;
    }
    this.#queue.push({
      tenantId: input.tenantId,
      actor: input.actor,
      operation: input.operation,
      resourceId: input.resourceId,
      outcome: input.outcome,
      detail: input.detail ?? null,
      at: this.#clock.now(),
    });
    if (this.#queue.length >= this.#maxBatch && !this.#backingOff) this.#flushInBackground();
    else this.#schedule();
  }

  #schedule(): void {
    if (this.#timer !== null) return;
    this.#timer = setTimeout(() => this.#flushInBackground(), this.#flushMs);
    this.#timer.unref();
  }

  /**
   * Seals the unsealed entries of `tenants` (written by token writes on any instance, or left by a
   * vault that stopped before its flush): the sweep's pass over every chain.
   */
  async seal(tenants: readonly string[]): Promise<void> {
    if (this.#auditKey === undefined || tenants.length === 0) return;
    await this.#store.appendAudit([], await this.#sealer([], tenants));
  }

  /** A sealer over the MAC keys of every tenant of `batch` and `tenants`. */
  async #sealer(batch: readonly AuditEntry[], tenants: Iterable<string>): Promise<AuditSealer | undefined> {
    if (this.#auditKey === undefined) return undefined;
    const keys = new Map<string, Buffer>();
    const extra = [...tenants];
    for (const tenantId of extra) if (!keys.has(tenantId)) keys.set(tenantId, await this.#auditKey(tenantId));
    // Entries of one tenant mostly follow each other: a lookup per change of tenant, not per entry.
    let previous: string | undefined;
    for (const { tenantId } of batch) {
      if (tenantId === previous) continue;
      previous = tenantId;
      if (!keys.has(tenantId)) keys.set(tenantId, await this.#auditKey(tenantId));
    }
    return chainSealer(keys, extra, this.#clock.now());
  }

  /**
   * Runs an operation and records its failure. Success entries are the operation's own business:
   * inside its transaction or queued.
   */
  async guard<T>(actor: { tenantId: string; applicationId: string }, operation: string, resourceId: unknown, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      this.recordFailure(actor, operation, resourceId, error);
      throw error;
    }
  }

  /** Queues the failure entry of an operation: its error code, never the message (which might quote input). */
  recordFailure(actor: { tenantId: string; applicationId: string }, operation: string, resourceId: unknown, error: unknown): void {
    this.record({
      tenantId: actor.tenantId,
      actor: actor.applicationId,
      operation,
      // The id of a refused request may hold anything, NUL included, which PostgreSQL text refuses:
      // an entry must never make its batch unstorable.
      resourceId: typeof resourceId === 'string' ? resourceId.slice(0, 250).replaceAll('\u0000', '\uFFFD') : null,
      outcome: 'failure',
      detail: error instanceof VaultError ? error.code : 'internal_error',
    });
  }

  /**
   * Writes every queued entry. Resolves when they are stored, or, when the store failed, when they
   * are back in the queue for the next flush (it never rejects).
   */
  flush(): Promise<void> {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    this.#flushing = this.#flushing.then(async () => {
      const batch = this.#queue;
      this.#queue = [];
      const unsealed = this.#unsealed;
      this.#unsealed = new Set();
      if (batch.length === 0 && unsealed.size === 0) return;
      try {
        await this.#store.appendAudit(batch, await this.#sealer(batch, unsealed));
        this.#backingOff = false;
      } catch (error) {
        for (const tenantId of unsealed) this.#unsealed.add(tenantId);
        this.#failed(batch, error);
      }
    });
    return this.#flushing;
  }

  /** Flushes, and reports (log, counter) what could not be stored before the store closes. */
  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
    // Entries recorded while that flush was in flight (the store still open) are stored too, unless
    // it failed (no second wait on a store that is down). Later entries are refused by record().
    if ((this.#queue.length > 0 || this.#unsealed.size > 0) && !this.#backingOff) await this.flush();
    if (this.#queue.length === 0) return;
    this.#drop(this.#queue.length, 'audit entries dropped: the store failed at close');
    this.#queue = [];
  }

  #flushInBackground(): void {
    // eslint-disable-next-line @typescript-eslint/no-floating-promises -- flush() never rejects: a failed append is caught inside it, logged and requeued
    void this.flush();
  }

  #failed(batch: AuditEntry[], error: unknown): void {
    this.#flushFailures++;
    const reason = error instanceof VaultError ? error.code : error instanceof Error ? error.name : typeof error;
    if (error instanceof ValidationError) {
      this.#drop(batch.length, 'audit entries dropped: the store refused them as invalid', reason);
      return;
    }
    this.#logger.warn('audit flush failed; the entries are kept and retried', { entries: batch.length, error: reason });
    this.#backingOff = true;
    // Back at the head, in order, ahead of what was recorded meanwhile.
    this.#queue = batch.concat(this.#queue);
    const excess = this.#queue.length - this.#maxQueued;
    if (excess > 0) {
      this.#queue.splice(0, excess);
      this.#drop(excess, 'audit entries dropped: the queue is full');
    }
    if (this.#timer === null) {
      // Retried after a pause (an outage is rarely over at once): ten flush periods, at most 5 s.
      this.#timer = setTimeout(() => this.#flushInBackground(), Math.min(5_000, this.#flushMs * 10));
      this.#timer.unref();
    }
  }

  #drop(entries: number, message: string, reason?: string): void {
    this.#droppedEntries += entries;
    this.#logger.error(message, reason === undefined ? { entries } : { entries, error: reason });
  }
}
