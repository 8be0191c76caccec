import type { AccessRule, ApplicationType, Permission } from '../permissions.js';
import type { WebhookStore } from './webhook-records.js';

export type {
  WebhookAttempt,
  WebhookAttemptOutcome,
  WebhookDeliveryFilter,
  WebhookDeliveryRecord,
  WebhookDeliveryStatus,
  WebhookRecord,
  WebhookSecretRecord,
  WebhookStore,
} from './webhook-records.js';

/**
 * The persistence boundary. Every method is an atomic domain operation whose guarantee is stated in
 * its doc comment; implementations (SQLite, PostgreSQL) run the same conformance suite
 * (`tokenvault/testing` → `runStoreConformance`). Times are epoch milliseconds. Every token query is
 * scoped by tenant: a row of another tenant is never returned, changed or counted.
 *
 * One contract for every store:
 * - Every method answers a Promise (the SQLite store's synchronous driver stays inside it).
 * - Expected outcomes are answers, never exceptions: a lookup answers null; a write that can only
 *   find nothing answers false; a write with several outcomes answers a string union
 *   (`'created' | 'exists'`, `'deleted' | 'not_found' | 'in_use'`), or a `{ status }` union when
 *   it carries a record. A taken id is `'exists'`, not a thrown ConflictError.
 * - A rejection is a failure: ServiceUnavailableError (the database cannot answer now; retry), or
 *   a fault of the store's own state.
 */

/** The answer of an insert: `'exists'` (nothing written) when the id (or another unique key) is taken. */
export type Inserted = 'created' | 'exists';

export interface TenantRecord {
  id: string;
  name: string;
  createdAt: number;
}

/** What a tenant is created with (see Store.createTenant). */
export interface InitialTenantRecords {
  application: ApplicationRecord;
  /** The first management application's key. */
  key: ApplicationKeyRecord;
  keys: readonly WrappedKeyRecord[];
}

/** A data key or index key, wrapped (encrypted) by the KeyProvider. */
export interface WrappedKeyRecord {
  tenantId: string;
  /** 'data' keys encrypt token data and rotate; the single 'index' key derives HMAC keys and never rotates. */
  purpose: 'data' | 'index';
  /** 1, 2, 3 … per tenant and purpose. */
  version: number;
  wrapped: Uint8Array;
  createdAt: number;
}

export interface StoredToken {
  tenantId: string;
  id: string;
  type: string;
  /** Envelope ciphertext of the JSON data (see crypto/key-ring.ts); AAD binds tenant and id. */
  ciphertext: Uint8Array;
  /** Version of the tenant data key that encrypted `ciphertext`. */
  keyVersion: number;
  /** Keyed HMAC of the fingerprint expression's output, or null when the expression rendered empty. */
  fingerprint: string | null;
  fingerprintExpression: string | null;
  /** The mask as given or defaulted (an expression tree; not sensitive). Null: no mask. */
  mask: unknown;
  containers: string[];
  metadata: Record<string, string>;
  /** Search index expressions as given (not their values). */
  searchIndexes: string[];
  /** Blind index values (keyed HMACs) produced by `searchIndexes`; matched by `data:` search terms. */
  searchHashes: string[];
  deduplicate: boolean;
  createdBy: string;
  createdAt: number;
  modifiedBy: string | null;
  modifiedAt: number | null;
  expiresAt: number | null;
  /** When a card token's cvc must be removed (createdAt + 1h); null when there is no cvc left. */
  cvcPurgeAt: number | null;
}

/**
 * A set of containers: every container under `prefix` (ancestor-or-self: a string prefix, since
 * paths end with '/') except those under any of `except`. Paths are lower-case.
 */
export interface ContainerScope {
  prefix: string;
  except: string[];
}

export interface TokenFilter {
  ids?: string[];
  types?: string[];
  /** Keys and values compared case-insensitively, exactly; several keys ANDed. */
  metadata?: Record<string, string>;
  /** Containers matched exactly (lower-case paths). A token matches when it has every one of them. */
  containers?: string[];
  /**
   * Access scopes (the caller's grants, see grantScopes in caller.ts): a token matches when every
   * one of its containers lies in at least one scope. An empty list matches nothing. The token
   * service always sets it, so pages hold only tokens the caller may see and counts count only them.
   */
  within?: ContainerScope[];
  /** Tokens of this fingerprint. */
  fingerprints?: string[];
  /** Each hash must be among the token's blind index values (ANDed). */
  searchHashes?: string[];
}

/** Cursor mode (default): `start` is an opaque cursor from a previous page's `next`. */
export interface CursorPage {
  mode: 'cursor';
  size: number;
  start?: string;
}
/** Offset mode: 1-based `page`. */
export interface OffsetPage {
  mode: 'offset';
  size: number;
  page: number;
}
export type PageRequest = CursorPage | OffsetPage;

export type PageResult<T> =
  | { mode: 'cursor'; items: T[]; next: string | null }
  | { mode: 'offset'; items: T[]; totalItems: number };

export interface DeletedTokenRecord {
  tenantId: string;
  id: string;
  type: string;
  deletedAt: number;
  /** Application id, or 'system:expiry' for the sweep. */
  deletedBy: string;
}

/** A token the expiry sweep removed. */
export interface ExpiredTokenRecord {
  tenantId: string;
  id: string;
  type: string;
  expiresAt: number;
}

export interface ApplicationRecord {
  id: string;
  tenantId: string;
  name: string;
  type: ApplicationType;
  permissions: Permission[];
  rules: AccessRule[];
  createdBy: string | null;
  createdAt: number;
  modifiedBy: string | null;
  modifiedAt: number | null;
}

/** One API key of an application (an application has one or more). Only its hash is stored. */
export interface ApplicationKeyRecord {
  id: string;
  tenantId: string;
  applicationId: string;
  /** SHA-256 of the API key (hex); compared in constant time. */
  keyHash: string;
  /** First 16 hex characters of keyHash; an indexed lookup column that is not enough to authenticate. */
  keyLookup: string;
  createdBy: string | null;
  createdAt: number;
}

/** A key that authenticated: the key and its application. */
export interface ApplicationKeyMatch {
  key: ApplicationKeyRecord;
  application: ApplicationRecord;
}

/** What an authorized session may do (before it is bounded by its authorizer's current grants). */
export interface SessionGrants {
  permissions: Permission[];
  rules: AccessRule[];
}

/** A session: a short-lived key minted by a public application, usable once a private one authorizes it. */
export interface SessionRecord {
  id: string;
  tenantId: string;
  /** The (public) application that created it. */
  applicationId: string;
  /** SHA-256 (hex) of the session key; compared in constant time. */
  keyHash: string;
  /** First 16 hex characters of keyHash (indexed). */
  keyLookup: string;
  /** SHA-256 (hex) of the nonce that authorizes it; unique per tenant. */
  nonceHash: string;
  createdAt: number;
  expiresAt: number;
  /** The (private) application that authorized it; null until then. */
  authorizedBy: string | null;
  authorizedAt: number | null;
  grants: SessionGrants | null;
}

/** An authorization of a pending session (Store.authorizeSession). */
export interface SessionAuthorization {
  authorizedBy: string;
  authorizedAt: number;
  grants: SessionGrants;
  /** A requested earlier expiry; the session keeps the earlier of this and its own. */
  expiresAt: number | null;
}

export type AuthorizeSessionResult = { status: 'authorized'; session: SessionRecord } | { status: 'not_found' } | { status: 'already_authorized' };

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

export type DeclaredType = 'string' | 'number' | 'boolean' | 'object' | 'array';

export interface FormulaRecord {
  id: string;
  tenantId: string;
  name: string;
  description: string | null;
  code: string;
  configuration: { name: string; description: string | null; type: 'string' | 'number' | 'boolean' }[];
  requestParameters: { name: string; description: string | null; type: DeclaredType; optional: boolean }[];
  createdBy: string | null;
  createdAt: number;
  modifiedBy: string | null;
  modifiedAt: number | null;
}

/** A reactor runs exactly one of: its formula's code (`formulaId`) or its own inline `code`; the other is null. */
export interface ReactorRecord {
  id: string;
  tenantId: string;
  name: string;
  formulaId: string | null;
  /** Inline code (the reactor was created with `code` instead of a formula). */
  code: string | null;
  configuration: Record<string, unknown>;
  applicationId: string | null;
  createdBy: string | null;
  createdAt: number;
  modifiedBy: string | null;
  modifiedAt: number | null;
}

export interface ReactorFilter {
  ids?: string[];
  /** Case-insensitive substring; `*` matches any run of characters. */
  name?: string;
}

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
  /** Which handler runs it, e.g. 'reactor.run', 'webhook.deliver', 'sweep'. */
  kind: string;
  /** Unique among stored jobs when not null: enqueueing a second job with the key does nothing ('sweep'). */
  key: string | null;
  /** JSON text read by the handler. */
  payload: string;
  /** Due from this time. */
  runAt: number;
  /** Claims so far (a claim counts as an attempt). */
  attempts: number;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  createdAt: number;
  /** Why the last attempt failed (an error code or short message, never data). */
  lastError: string | null;
}

/**
 * An asynchronous reactor invocation (spec 4.2 with callback_url, or react-async). The args as the
 * caller gave them (token references unresolved, but possibly raw data) and the run's result are
 * sealed with the tenant's data key (KeyRing.sealRecord); the error is a problem object, which
 * carries no data.
 */
export interface ReactorRequestRecord {
  tenantId: string;
  id: string;
  reactorId: string;
  /** The application that asked for the run: the run acts with its grants, and only it reads the result. */
  applicationId: string;
  status: 'pending' | 'running' | 'completed' | 'failed';
  callbackUrl: string | null;
  timeoutMs: number;
  args: Uint8Array;
  result: Uint8Array | null;
  /** JSON text of the problem object of a failed run. */
  error: string | null;
  createdAt: number;
  startedAt: number | null;
  completedAt: number | null;
  /** When the finished request is removed (completedAt + 24 h); null until it finishes. */
  expiresAt: number | null;
}

/** How an asynchronous run ended (Store.finishReactorRequest). */
export interface ReactorRequestOutcome {
  status: 'completed' | 'failed';
  result: Uint8Array | null;
  error: string | null;
  completedAt: number;
  expiresAt: number;
}

export type CreateTokenResult =
  | { status: 'created' }
  | { status: 'id_conflict' }
  /** `deduplicate` was set and a token of the same tenant, type and fingerprint exists. */
  | { status: 'duplicate'; existing: StoredToken };

export type CreateTokensResult = { status: 'created'; results: CreateTokenResult[] } | { status: 'id_conflict'; index: number };

export type UpdateTokenResult =
  | { status: 'updated' }
  | { status: 'not_found' }
  | { status: 'duplicate'; existing: StoredToken };

/**
 * What an update of an application changes: only the fields given are written (the others keep
 * whatever is stored, including changes made concurrently), plus the modification stamp.
 */
export interface ApplicationChanges {
  name?: string;
  permissions?: Permission[];
  rules?: AccessRule[];
  modifiedBy: string | null;
  modifiedAt: number;
}

/** What an update of a formula changes (only the fields given), plus the modification stamp. */
export interface FormulaChanges {
  name?: string;
  description?: string | null;
  code?: string;
  configuration?: FormulaRecord['configuration'];
  requestParameters?: FormulaRecord['requestParameters'];
  modifiedBy: string | null;
  modifiedAt: number;
}

/** What an update of a reactor changes (only the fields given), plus the modification stamp. */
export interface ReactorChanges {
  name?: string;
  /** Inline code (only for a reactor created with code; its formula never changes). */
  code?: string;
  configuration?: Record<string, unknown>;
  applicationId?: string | null;
  modifiedBy: string | null;
  modifiedAt: number;
}

/**
 * The answer of a record update: the record as stored after it; `not_found`; `changed` when the
 * precondition no longer held (a concurrent update came first; nothing written); `last_holder`
 * (applications, see updateApplication).
 */
export type RecordUpdateResult<T> = { status: 'updated'; record: T } | { status: 'not_found' } | { status: 'changed' };

export interface Store extends WebhookStore {
  /** Applies pending migrations; idempotent. Called by createVault before first use. */
  migrate(): Promise<void>;
  close(): Promise<void>;

  // --- tenants and keys -------------------------------------------------------------------------
  /**
   * Atomically inserts the tenant and, when given, its first application and its wrapped keys: all
   * of them or none: 'exists' (nothing written) when the tenant id is taken.
   */
  createTenant(tenant: TenantRecord, initial?: InitialTenantRecords): Promise<Inserted>;
  getTenant(id: string): Promise<TenantRecord | null>;
  listTenants(): Promise<TenantRecord[]>;
  /** Inserts a wrapped key; false when (tenant, purpose, version) exists (a racing writer won). */
  insertWrappedKey(key: WrappedKeyRecord): Promise<boolean>;
  /** All wrapped keys of a tenant and purpose, ascending by version. */
  listWrappedKeys(tenantId: string, purpose: 'data' | 'index'): Promise<WrappedKeyRecord[]>;

  // --- tokens -----------------------------------------------------------------------------------
  /**
   * Atomically: when `token.deduplicate` and a live token with the same tenant, type and non-null
   * fingerprint exists, returns it as a duplicate and writes nothing; else when a token (live,
   * expired-but-unswept, or deleted-with-reference) has the same tenant and id, returns id_conflict
   * and writes nothing; else inserts the token, its metadata and search hashes, and the audit entry
   * when one is given (null: the caller records it another way).
   */
  createToken(token: StoredToken, now: number): Promise<CreateTokenResult>;
  /**
   * Atomically creates `tokens` in order, each as createToken would (deduplication included, also
   * against an earlier token of the same call; no audit entries): when one of them meets an id
   * conflict, none of them is written and the answer names its index. At most 100 tokens.
   */
  createTokens(tokens: readonly StoredToken[], now: number): Promise<CreateTokensResult>;
  /** The live token (not expired at `now`) of the tenant with that id, or null. */
  getToken(tenantId: string, id: string, now: number): Promise<StoredToken | null>;
  /** Live tokens matching every given filter, in creation order. */
  listTokens(tenantId: string, filter: TokenFilter, page: PageRequest, now: number): Promise<PageResult<StoredToken>>;
  /**
   * Atomically replaces a live token's mutable fields with `next` (same tenant and id). When
   * `next.deduplicate`, and the update changes the fingerprint or turns deduplication on, and
   * another live token of the same type has `next.fingerprint`, writes nothing and returns it as a
   * duplicate. An update that keeps both (a metadata change) is never refused as a duplicate: its
   * answer would otherwise tell a caller that cannot read the data that another token holds the
   * same fingerprint. Writes the audit entry with the change.
   */
  updateToken(next: StoredToken, audit: AuditEntry, now: number): Promise<UpdateTokenResult>;
  /**
   * Atomically removes a live token (its data, metadata and search hashes) and leaves a
   * DeletedTokenRecord; false when no live token has that id. Writes the audit entry.
   */
  deleteToken(tenantId: string, id: string, deletedBy: string, audit: AuditEntry, now: number): Promise<boolean>;
  getDeletedToken(tenantId: string, id: string): Promise<DeletedTokenRecord | null>;
  /**
   * Physically removes up to `limit` tokens (any tenant) whose expiresAt <= now, leaving reference
   * records deleted by 'system:expiry' and an audit entry each. Returns the tokens it removed
   * (oldest expiry first), for the `token.expired` events.
   */
  purgeExpiredTokens(now: number, limit: number): Promise<ExpiredTokenRecord[]>;
  /** Up to `limit` tokens (any tenant) with cvcPurgeAt <= now, oldest first. */
  listCvcDue(now: number, limit: number): Promise<StoredToken[]>;
  /**
   * Replaces the ciphertext and key version of a token only if its current ciphertext is still
   * `expected` (compare-and-set, so a concurrent update wins), and sets cvcPurgeAt. True if written.
   */
  replaceCiphertext(
    tenantId: string,
    id: string,
    expected: Uint8Array,
    next: { ciphertext: Uint8Array; keyVersion: number; cvcPurgeAt: number | null },
  ): Promise<boolean>;
  /** Up to `limit` tokens of a tenant encrypted with a key version below `version`, any expiry. */
  listTokensBelowKeyVersion(tenantId: string, version: number, limit: number): Promise<StoredToken[]>;
  /** Count of tokens of a tenant below a key version (progress reporting for re-encryption). */
  countTokensBelowKeyVersion(tenantId: string, version: number): Promise<number>;

  // --- applications ----------------------------------------------------------------------------
  /** Inserts the application and its first key in one transaction; 'exists' (nothing written) when the id is taken. */
  createApplication(app: ApplicationRecord, key: ApplicationKeyRecord): Promise<Inserted>;
  getApplication(tenantId: string, id: string): Promise<ApplicationRecord | null>;
  /**
   * Every application key whose keyLookup matches (normally one), any tenant, with its application;
   * the caller compares keyHash in constant time.
   */
  findApplicationKeys(keyLookup: string): Promise<ApplicationKeyMatch[]>;
  /**
   * Adds a key to an existing application of the tenant: 'not_found' when there is none, 'limit'
   * (nothing written) when it already has `max` keys. Concurrent additions to one application are
   * serialized, so the limit holds under races.
   */
  createApplicationKey(key: ApplicationKeyRecord, max: number): Promise<'created' | 'not_found' | 'limit'>;
  /** The keys of an application of the tenant, oldest first ([] when there is no such application). */
  listApplicationKeys(tenantId: string, applicationId: string): Promise<ApplicationKeyRecord[]>;
  getApplicationKey(tenantId: string, applicationId: string, keyId: string): Promise<ApplicationKeyRecord | null>;
  /**
   * Deletes one key of an application; 'last_key' (nothing deleted) when it is the application's
   * only key. Concurrent deletions of one application's keys are serialized, so racing deletions
   * of its last two keys leave one.
   */
  deleteApplicationKey(tenantId: string, applicationId: string, keyId: string): Promise<'deleted' | 'not_found' | 'last_key'>;
  /**
   * Atomically replaces every key of an existing application with `key` and stamps the application
   * modified (`modifiedBy`, `key.createdAt`); false (nothing written) when there is no such application.
   */
  replaceApplicationKeys(key: ApplicationKeyRecord, modifiedBy: string): Promise<boolean>;
  listApplications(tenantId: string, page: PageRequest): Promise<PageResult<ApplicationRecord>>;
  /**
   * Atomically writes `changes` (only the fields given: a new key leaves permissions alone and a
   * new set of permissions leaves the key alone, so two concurrent updates of different fields
   * both stay) and returns the record as stored; not_found when missing. With `keep`: in the same
   * transaction, answers 'last_holder' and changes nothing when the tenant has an application
   * holding every permission of `keep` and would have none after the change. Concurrent guarded
   * changes of one tenant's applications are serialized, so two cannot each remove "the other" holder.
   */
  updateApplication(
    tenantId: string,
    id: string,
    changes: ApplicationChanges,
    keep?: readonly Permission[],
  ): Promise<{ status: 'updated'; record: ApplicationRecord } | { status: 'not_found' } | { status: 'last_holder' }>;
  /**
   * Deletes, with its keys and the sessions it created or authorized, in one transaction; 'not_found'
   * when missing. `keep`: as in updateApplication.
   */
  deleteApplication(tenantId: string, id: string, keep?: readonly Permission[]): Promise<'deleted' | 'not_found' | 'last_holder'>;

  // --- sessions ---------------------------------------------------------------------------------
  /** Inserts a pending session; 'exists' (nothing written) when its id or (tenant, nonce) is taken. */
  createSession(session: SessionRecord): Promise<Inserted>;
  /** Every session whose keyLookup matches (normally one), any tenant, expired or not; the caller compares keyHash. */
  findSessions(keyLookup: string): Promise<SessionRecord[]>;
  /**
   * Atomically authorizes the tenant's pending session with that nonce hash if it has not expired at
   * `now`: sets the grants and authorizer, and lowers expiresAt to `authorization.expiresAt` when
   * that is earlier. A nonce works once: of racing authorizations exactly one gets 'authorized', the
   * others 'already_authorized'. Unknown, other tenant's and expired nonces: 'not_found'.
   */
  authorizeSession(tenantId: string, nonceHash: string, authorization: SessionAuthorization, now: number): Promise<AuthorizeSessionResult>;
  /** Removes up to `limit` sessions (any tenant) whose expiresAt <= now; returns how many. */
  purgeExpiredSessions(now: number, limit: number): Promise<number>;

  // --- reactor formulas and reactors ------------------------------------------------------------
  /** Inserts; 'exists' (nothing written) when the id is taken. */
  createFormula(formula: FormulaRecord): Promise<Inserted>;
  getFormula(tenantId: string, id: string): Promise<FormulaRecord | null>;
  listFormulas(tenantId: string, page: PageRequest): Promise<PageResult<FormulaRecord>>;
  /**
   * Atomically writes `changes` (only the fields given). With `expected`: only while the formula's
   * code and declarations are still those (what runs, which the caller's authorization was decided
   * on); else `changed` and nothing written.
   */
  updateFormula(
    tenantId: string,
    id: string,
    changes: FormulaChanges,
    expected?: Pick<FormulaRecord, 'code' | 'configuration' | 'requestParameters'>,
  ): Promise<RecordUpdateResult<FormulaRecord>>;
  /** Atomically: 'in_use' (nothing deleted) when a reactor of the tenant references it; 'not_found'; else 'deleted'. */
  deleteFormula(tenantId: string, id: string): Promise<'deleted' | 'not_found' | 'in_use'>;
  /** Inserts; 'exists' (nothing written) when the id is taken. */
  createReactor(reactor: ReactorRecord): Promise<Inserted>;
  getReactor(tenantId: string, id: string): Promise<ReactorRecord | null>;
  listReactors(tenantId: string, filter: ReactorFilter, page: PageRequest): Promise<PageResult<ReactorRecord>>;
  /**
   * Atomically writes `changes` (only the fields given; the formula never changes). With
   * `expected`: only while the reactor is still bound to that application (the binding the
   * caller's authorization was decided on); else `changed` and nothing written.
   */
  updateReactor(
    tenantId: string,
    id: string,
    changes: ReactorChanges,
    expected?: { applicationId: string | null },
  ): Promise<RecordUpdateResult<ReactorRecord>>;
  deleteReactor(tenantId: string, id: string): Promise<boolean>;

  // --- idempotency ------------------------------------------------------------------------------
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

  // --- asynchronous reactor runs -----------------------------------------------------------------
  /** Atomically stores a pending request and the job that will run it: both or neither. */
  createReactorRequest(request: ReactorRequestRecord, job: JobRecord): Promise<void>;
  /** The request of the tenant with that id (any status), or null. */
  getReactorRequest(tenantId: string, id: string): Promise<ReactorRequestRecord | null>;
  /** Marks a pending (or, after a lost worker, running) request running; startedAt keeps its first value. False once it finished or when missing. */
  startReactorRequest(tenantId: string, id: string, now: number): Promise<boolean>;
  /** Records the outcome of a request not yet finished; false (nothing written) when it already finished or is missing. */
  finishReactorRequest(tenantId: string, id: string, outcome: ReactorRequestOutcome): Promise<boolean>;
  /** Removes up to `limit` finished requests (any tenant) whose expiresAt <= now; how many it removed. */
  purgeExpiredReactorRequests(now: number, limit: number): Promise<number>;

  // --- background jobs ---------------------------------------------------------------------------
  /** Inserts a job; false (nothing written) when `job.key` is not null and a job with that key exists. */
  enqueueJob(job: JobRecord): Promise<boolean>;
  /**
   * Atomically claims up to `limit` jobs due at `now` (runAt <= now) that are not leased or whose
   * lease ran out, earliest runAt first: sets leaseOwner = owner, leaseExpiresAt = now + leaseMs and
   * counts an attempt. Two concurrent claimers never get the same job while its lease is live.
   */
  claimJobs(owner: string, now: number, leaseMs: number, limit: number): Promise<JobRecord[]>;
  /** Moves the lease of a job `owner` still holds to `until`; false when it no longer holds it. */
  renewJobLease(id: string, owner: string, until: number): Promise<boolean>;
  /** Removes a finished job, only while `owner` holds it; false otherwise (another worker took it over). */
  finishJob(id: string, owner: string): Promise<boolean>;
  /** Releases a job `owner` holds and makes it due at `runAt` with `lastError`; false when it no longer holds it. */
  rescheduleJob(id: string, owner: string, runAt: number, lastError: string | null): Promise<boolean>;
  /** How many jobs are due at `now` and not leased (queue depth, for metrics). */
  countDueJobs(now: number): Promise<number>;

  // --- audit ------------------------------------------------------------------------------------
  /** Appends entries in one transaction (reads are audited in batches to keep fsyncs off the read path). */
  appendAudit(entries: readonly AuditEntry[]): Promise<void>;
  listAudit(tenantId: string, filter: AuditFilter, page: PageRequest): Promise<PageResult<StoredAuditEntry>>;
}
