import type { AccessRule, ApplicationType, Permission } from '../permissions/permissions.js';
import type { Inserted } from './store-answers.js';
import type { PageRequest, PageResult } from './store-paging.js';

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
  /**
   * Counts changes of the application's credentials: replaceApplicationKeys and a
   * deleteApplicationKey that deletes add one, in the transaction that changes the keys, and
   * nothing else changes it (createApplication stores it as given: 0 for a new application). A
   * session records it for the application that created it and the one that authorized it, and
   * ends when either moves on (src/auth/session-auth.ts): revoking keys revokes the sessions
   * they made, on every instance sharing the database.
   */
  credentialsGeneration: number;
  /**
   * The page origins (`https://shop.example`) a public application's browser elements may be
   * embedded in and tokenize from; empty or absent: any (docs/elements.md). Stores always return it.
   */
  allowedOrigins?: string[];
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
  /**
   * The application's grants when a caller other than a tenant administrator made the key (null:
   * made by an administrator, or before keys recorded this). The key then acts with no more than
   * both these and the application's current grants, so a later widening of the application by an
   * administrator does not reach whoever made the key (docs/authority.md).
   */
  grants: SessionGrants | null;
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
  /** The creating application's credentialsGeneration as the key that created the session knew it. */
  creatorGeneration: number;
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
  /** The authorizing application's credentialsGeneration as the key that authorized it knew it; null until then. */
  authorizerGeneration: number | null;
}

/** An authorization of a pending session (Store.authorizeSession). */
export interface SessionAuthorization {
  authorizedBy: string;
  authorizedAt: number;
  grants: SessionGrants;
  /** The authorizer's credentialsGeneration as its caller knew it (stored as given, not re-read). */
  authorizerGeneration: number;
  /** A requested earlier expiry; the session keeps the earlier of this and its own. */
  expiresAt: number | null;
}

export type AuthorizeSessionResult = { status: 'authorized'; session: SessionRecord } | { status: 'not_found' } | { status: 'already_authorized' };

/**
 * What an update of an application changes: only the fields given are written (the others keep
 * whatever is stored, including changes made concurrently), plus the modification stamp.
 */
export interface ApplicationChanges {
  name?: string;
  permissions?: Permission[];
  rules?: AccessRule[];
  allowedOrigins?: string[];
  modifiedBy: string | null;
  modifiedAt: number;
}

/** Applications, their keys and sessions (see Store for the contract every method keeps). */
export interface ApplicationStore {
  // --- applications --------------------------------------------------------------------------
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
   * Deletes one key of an application and adds one to its credentialsGeneration, in one
   * transaction; 'last_key' (nothing deleted, nothing counted) when it is the application's only
   * key. Concurrent deletions of one application's keys are serialized, so racing deletions of its
   * last two keys leave one.
   */
  deleteApplicationKey(tenantId: string, applicationId: string, keyId: string): Promise<'deleted' | 'not_found' | 'last_key'>;
  /**
   * Atomically replaces every key of an existing application with `key`, stamps the application
   * modified (`modifiedBy`, `key.createdAt`) and adds one to its credentialsGeneration; false
   * (nothing written) when there is no such application. Concurrent replacements each count (none
   * is lost to a read-then-write).
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
   * With `expected`: only while the application's permissions and rules are still those (the
   * grants the caller's authorization was decided on); else `changed` and nothing written.
   * credentialsGeneration is never changed here.
   */
  updateApplication(
    tenantId: string,
    id: string,
    changes: ApplicationChanges,
    keep?: readonly Permission[],
    expected?: Pick<ApplicationRecord, 'permissions' | 'rules'>,
  ): Promise<{ status: 'updated'; record: ApplicationRecord } | { status: 'not_found' } | { status: 'last_holder' } | { status: 'changed' }>;
  /**
   * Deletes, with its keys and the sessions it created or authorized, in one transaction; 'not_found'
   * when missing. `keep`: as in updateApplication.
   */
  deleteApplication(tenantId: string, id: string, keep?: readonly Permission[]): Promise<'deleted' | 'not_found' | 'last_holder'>;

  // --- sessions ------------------------------------------------------------------------------
  /** Inserts a pending session; 'exists' (nothing written) when its id or (tenant, nonce) is taken. */
  createSession(session: SessionRecord): Promise<Inserted>;
  /** Every session whose keyLookup matches (normally one), any tenant, expired or not; the caller compares keyHash. */
  findSessions(keyLookup: string): Promise<SessionRecord[]>;
  /**
   * Atomically authorizes the tenant's pending session with that nonce hash if it has not expired at
   * `now`: sets the grants, authorizer and authorizerGeneration, and lowers expiresAt to `authorization.expiresAt` when
   * that is earlier. A nonce works once: of racing authorizations exactly one gets 'authorized', the
   * others 'already_authorized'. Unknown, other tenant's and expired nonces: 'not_found'.
   */
  authorizeSession(tenantId: string, nonceHash: string, authorization: SessionAuthorization, now: number): Promise<AuthorizeSessionResult>;
  /** Removes up to `limit` sessions (any tenant) whose expiresAt <= now; returns how many. */
  purgeExpiredSessions(now: number, limit: number): Promise<number>;
}
