import type { PageRequest, PageResult } from './store-paging.js';
import type { AuditSealer } from './audit-chain-store.js';

/** A stored idempotent response, keyed by tenant, application and the client's key. */
export interface IdempotencyRecord {
  tenantId: string;
  applicationId: string;
  key: string;
  /** SHA-256 of method, path and body: the same key with another request is rejected. */
  requestHash: string;
  /**
   * `withdrawn`: the stored response was dropped because a token whose data it may carry was deleted,
   * expired or lost its cvc; the key answers a conflict until `expiresAt` instead of replaying it.
   */
  state: 'in_flight' | 'done' | 'withdrawn';
  status: number | null;
  /**
   * The response body encrypted with the tenant's data key (KeyRing.sealRecord, bound to tenant,
   * application and key); null while in flight, once withdrawn, or when the response had no body.
   */
  body: Uint8Array | null;
  /** When it was claimed; names the claim in complete and release. */
  createdAt: number;
  /** In flight: when the claim's lease runs out (the key may then be claimed again). Done: when the stored response is dropped. */
  expiresAt: number;
  /**
   * Done: when the response stops being replayed (answers as withdrawn) because a token it carries
   * expires or its cvc lapses then; null or absent: not before expiresAt.
   */
  withdrawAt?: number | null;
}

/** A finished response to store for a claim (see Store.completeIdempotencyKey). */
export interface IdempotencyResponse {
  status: number;
  /** The encrypted body, null for a response without one. */
  body: Uint8Array | null;
  expiresAt: number;
  /** Ids of the tokens whose data the response may carry; ids that name no token of the tenant are ignored. */
  tokenIds: readonly string[];
}

/** One claim of an idempotency key: the key and the `createdAt` of the record that claimed it. */
export interface IdempotencyClaim {
  tenantId: string;
  applicationId: string;
  key: string;
  claimedAt: number;
}

/**
 * A unit of background work (src/jobs/job-queue.ts). Claimed with a lease: the owner runs it and
 * finishes or reschedules it before `leaseExpiresAt`; once the lease runs out any worker may claim
 * it again (a crashed worker's jobs are not lost). The payload never holds token data or other
 * secrets in clear: handlers keep what they need sealed in their own tables and name it here.
 */
export interface JobRecord {
  id: string;
  /** The tenant the job works for; null for work across tenants (the sweep). */
  tenantId: string | null;
  /** Which handler runs it, e.g. 'reactor.run', 'webhook.deliver', 'sweep.cvc'. */
  kind: string;
  /** Unique among stored jobs when not null: enqueueing a second job with the key does nothing ('sweep.cvc'). */
  key: string | null;
  /** JSON text read by the handler. */
  payload: string;
  /** Due from this time. */
  runAt: number;
  /** Claims since the job last succeeded (a claim counts as an attempt; a recurring job's successful run resets it). */
  attempts: number;
  /** Attempts after which a throwing run is dropped for good (the kind's bound when it was enqueued). */
  maxAttempts: number;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  createdAt: number;
  /** Why the last attempt failed (an error code or short message, never data). */
  lastError: string | null;
}

export interface AuditEntry {
  tenantId: string;
  /** Application id, or 'system:…'. */
  actor: string;
  /** e.g. 'token:create', 'token:read', 'reactor:invoke', 'application:create'. */
  operation: string;
  /** The token, reactor, application or formula id concerned, when there is one. */
  resourceId: string | null;
  outcome: 'success' | 'failure';
  /** Error code on failure; never data. */
  detail: string | null;
  at: number;
}

export interface StoredAuditEntry extends AuditEntry {
  seq: number;
}

export interface AuditFilter {
  resourceId?: string;
  actor?: string;
  operation?: string;
}

/** Idempotency keys, background jobs and the audit log (see Store for the contract every method keeps). */
export interface OperationsStore {
  // --- idempotency ---------------------------------------------------------------------------
  /**
   * Atomically claims (tenant, application, key): inserts an in-flight record and returns
   * `{ claimed: true }`, or returns the existing unexpired record (`claimed: false`). An expired
   * record is replaced.
   */
  claimIdempotencyKey(record: IdempotencyRecord, now: number): Promise<{ claimed: true } | { claimed: false; existing: IdempotencyRecord }>;
  /**
   * Stores the response of a claim (state done, kept until `response.expiresAt`) if the key's record
   * is still that claim in flight: a claim whose lease ran out and was replaced changes nothing.
   * In the same transaction it records which of `response.tokenIds` are tokens of the tenant (a
   * later deletion, expiry purge or cvc removal of one of them withdraws the response in that
   * transaction), sets `withdrawAt` to the earliest expiry or cvc purge time among them, and stores
   * the record withdrawn at once when one of them was deleted meanwhile. A concurrent deletion
   * either comes first (the record is stored withdrawn) or sees the reference (it withdraws it).
   */
  completeIdempotencyKey(claim: IdempotencyClaim, response: IdempotencyResponse): Promise<void>;
  /** Releases a claim whose request failed, so the key may be retried; only that claim, only in flight. */
  releaseIdempotencyKey(claim: IdempotencyClaim): Promise<void>;
  /**
   * Removes up to `limit` idempotency records (any tenant, in flight or done) whose expiresAt <= now:
   * an expired record answers nothing any more. Returns how many it removed.
   */
  purgeExpiredIdempotencyKeys(now: number, limit: number): Promise<number>;

  // --- background jobs -----------------------------------------------------------------------
  /** Inserts a job; false (nothing written) when `job.key` is not null and a job with that key exists. */
  enqueueJob(job: JobRecord): Promise<boolean>;
  /**
   * Stores a recurring job (`job.key` not null): inserted when no job has its key; otherwise the
   * stored one is made due no later than `job.runAt` (its runAt becomes the earlier of the two; its
   * lease, attempts and payload are kept). So a clock stepped back since the stored runAt was set
   * cannot postpone the job past one interval from the new now. Atomic against a concurrent claim,
   * reschedule or scheduleJob of the same key.
   */
  scheduleJob(job: JobRecord): Promise<void>;
  /**
   * Atomically claims up to `limit` jobs of the given `kinds` (those the claimer has handlers for)
   * due at `now` (runAt <= now) that are not leased or whose lease ran out, earliest runAt first:
   * sets leaseOwner = owner, leaseExpiresAt = now + leaseMs and counts an attempt. Jobs of other
   * kinds are left alone, for an instance that knows them. Two concurrent claimers never get the
   * same job while its lease is live.
   */
  claimJobs(owner: string, now: number, leaseMs: number, limit: number, kinds: readonly string[]): Promise<JobRecord[]>;
  /** Moves the lease of a job `owner` still holds to `until`; false when it no longer holds it. */
  renewJobLease(id: string, owner: string, until: number): Promise<boolean>;
  /** Removes a finished job, only while `owner` holds it; false otherwise (another worker took it over). */
  finishJob(id: string, owner: string): Promise<boolean>;
  /**
   * Releases a job `owner` holds and makes it due at `runAt` with `lastError`; false when it no
   * longer holds it. `attempts`: 'keep' after a failed attempt (a retry counts toward maxAttempts);
   * 'reset' after a successful run of a recurring job, which starts counting again from 0.
   */
  rescheduleJob(id: string, owner: string, runAt: number, lastError: string | null, attempts: 'keep' | 'reset'): Promise<boolean>;
  /** How many jobs are due at `now` and not leased (queue depth, for metrics). */
  countDueJobs(now: number): Promise<number>;

  // --- audit ---------------------------------------------------------------------------------
  /**
   * Appends entries in one transaction (reads are audited in batches to keep fsyncs off the read
   * path). With a sealer they join their tenants' chains as they are written (AuditChainStore).
   */
  appendAudit(entries: readonly AuditEntry[], sealer?: AuditSealer): Promise<void>;
  listAudit(tenantId: string, filter: AuditFilter, page: PageRequest): Promise<PageResult<StoredAuditEntry>>;
}
