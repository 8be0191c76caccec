import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import { VaultError } from './errors.js';
import type { AuditEntry, Store } from './storage/store.js';

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

  constructor(store: Store, clock: Clock, logger: Logger, options: { flushMs?: number; maxBatch?: number } = {}) {
    this.#store = store;
    this.#clock = clock;
    this.#logger = logger;
    this.#flushMs = options.flushMs ?? 50;
    this.#maxBatch = options.maxBatch ?? 500;
  }

  /** An entry stamped with the clock, for a store call that writes it atomically with its change. */
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

  /** Queues an entry for the next batch. */
  record(input: AuditRecordInput): void {
    this.#queue.push(this.entry(input));
    if (this.#queue.length >= this.#maxBatch) void this.flush();
    else if (this.#timer === null) {
      this.#timer = setTimeout(() => void this.flush(), this.#flushMs);
      this.#timer.unref();
    }
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

  /** Writes every queued entry. Resolves when they are stored. */
  flush(): Promise<void> {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length === 0) return this.#flushing;
    this.#flushing = this.#flushing.then(async () => {
      try {
        await this.#store.appendAudit(batch);
      } catch (error) {
        this.#logger.error('audit flush failed', { entries: batch.length, error: (error as Error).message });
      }
    });
    return this.#flushing;
  }
}
