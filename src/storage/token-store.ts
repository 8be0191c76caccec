import type { ApplicationKeyRecord, ApplicationRecord } from './application-store.js';
import type { AuditEntry } from './operations-store.js';
import type { Inserted } from './store-answers.js';
import type { PageRequest, PageResult } from './store-paging.js';

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

/** Where a page of listCvcDue resumes: the last token of the previous page. */
export interface CvcCursor {
  cvcPurgeAt: number;
  tenantId: string;
  id: string;
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

export type CreateTokenResult =
  | { status: 'created' }
  | { status: 'id_conflict' }
  /** `deduplicate` was set and a token of the same tenant, type and fingerprint exists. */
  | { status: 'duplicate'; existing: StoredToken };

export type CreateTokensResult = { status: 'created'; results: CreateTokenResult[] } | { status: 'id_conflict'; index: number };

export type UpdateTokenResult = { status: 'updated' } | { status: 'not_found' } | { status: 'duplicate'; existing: StoredToken };

/** The tenants, their wrapped keys and their tokens (see Store for the contract every method keeps). */
export interface TokenStore {
  // --- tenants and keys ----------------------------------------------------------------------
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

  // --- tokens --------------------------------------------------------------------------------
  /**
   * Atomically: when `token.deduplicate` and a live token with the same tenant, type and non-null
   * fingerprint exists (with `dedupeWithin`: one whose every container lies in some of those
   * scopes, as TokenFilter.within; the oldest such), returns it as a duplicate and writes nothing;
   * else when a token (live, expired-but-unswept, or deleted-with-reference) has the same tenant
   * and id, returns id_conflict and writes nothing; else inserts the token, its metadata and
   * search hashes.
   */
  createToken(token: StoredToken, now: number, dedupeWithin?: readonly ContainerScope[]): Promise<CreateTokenResult>;
  /**
   * Atomically creates `tokens` in order, each as createToken would (deduplication included, within
   * `dedupeWithin`, also against an earlier token of the same call; no audit entries): when one of
   * them meets an id conflict, none of them is written and the answer names its index. At most 100 tokens.
   */
  createTokens(tokens: readonly StoredToken[], now: number, dedupeWithin?: readonly ContainerScope[]): Promise<CreateTokensResult>;
  /** The live token (not expired at `now`) of the tenant with that id, or null. */
  getToken(tenantId: string, id: string, now: number): Promise<StoredToken | null>;
  /** Live tokens matching every given filter, in creation order. */
  listTokens(tenantId: string, filter: TokenFilter, page: PageRequest, now: number): Promise<PageResult<StoredToken>>;
  /**
   * Atomically replaces a live token's mutable fields with `next` (same tenant and id). When
   * `next.deduplicate`, and the update changes the fingerprint or turns deduplication on, and
   * another live token of the same type has `next.fingerprint` (within `dedupeWithin`, as
   * createToken), writes nothing and returns it as a duplicate. An update that keeps both (a metadata change) is never refused as a duplicate: its
   * answer would otherwise tell a caller that cannot read the data that another token holds the
   * same fingerprint. Writes the audit entry with the change.
   */
  updateToken(next: StoredToken, audit: AuditEntry, now: number, dedupeWithin?: readonly ContainerScope[]): Promise<UpdateTokenResult>;
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
  /**
   * Up to `limit` tokens (any tenant) with cvcPurgeAt <= now, oldest first: ordered by
   * (cvcPurgeAt, tenantId, id). With `after` (the last token of the previous page), only those
   * ordered after it: the sweep pages past tokens it could not rewrite (a damaged ciphertext stays
   * due), so they never fill every page.
   */
  listCvcDue(now: number, limit: number, after?: CvcCursor): Promise<StoredToken[]>;
  /**
   * Replaces the ciphertext and key version of a token only if its current ciphertext is still
   * `expected` (compare-and-set, so a concurrent update wins), and sets cvcPurgeAt. True if written.
   */
  replaceCiphertext(tenantId: string, id: string, expected: Uint8Array, next: { ciphertext: Uint8Array; keyVersion: number; cvcPurgeAt: number | null }): Promise<boolean>;
  /** Up to `limit` tokens of a tenant encrypted with a key version below `version`, any expiry. */
  listTokensBelowKeyVersion(tenantId: string, version: number, limit: number): Promise<StoredToken[]>;
  /** Count of tokens of a tenant below a key version (progress reporting for re-encryption). */
  countTokensBelowKeyVersion(tenantId: string, version: number): Promise<number>;
}
