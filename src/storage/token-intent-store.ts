import type { Inserted } from './store-answers.js';
import type { ContainerScope, CreateTokenResult, StoredToken } from './token-store.js';

/**
 * A token intent (docs/token-intents.md): data held for a short while until a token is made of it.
 * The data is sealed like a token's (envelope AES-GCM under the tenant's data key, in the record
 * AAD domain `["record", tenant, "token-intent", id]`); nothing else in the row is derived from it
 * but the keyed fingerprint.
 */
export interface StoredTokenIntent {
  tenantId: string;
  /** A random (version 4) UUID: the id is what lets an application use the intent. */
  id: string;
  /** A token type name (token-types.ts). */
  type: string;
  /** The sealed JSON data (KeyRing.sealRecord). */
  sealed: Uint8Array;
  /** Keyed HMAC of the type's default fingerprint expression, as a token of that data would have; null when it rendered empty. */
  fingerprint: string | null;
  createdBy: string;
  createdAt: number;
  expiresAt: number;
}

/** What converting an intent answered: a token's creation, or no live intent of that id. */
export type ConvertTokenIntentResult = CreateTokenResult | { status: 'not_found' };

/** Token intents (see Store for the contract every method keeps). */
export interface TokenIntentStore {
  /** Inserts the intent; 'exists' (nothing written) when the tenant already has one of that id. */
  createTokenIntent(intent: StoredTokenIntent): Promise<Inserted>;
  /** The live intent (expiresAt > now) of the tenant with that id, or null. */
  getTokenIntent(tenantId: string, id: string, now: number): Promise<StoredTokenIntent | null>;
  /** Removes the live intent; false when the tenant has no live intent of that id. */
  deleteTokenIntent(tenantId: string, id: string, now: number): Promise<boolean>;
  /**
   * Atomically: removes the live intent `intentId` of `token.tenantId` and creates `token` as
   * createToken does (deduplication within `dedupeWithin` included). When there is no live intent
   * of that id, writes nothing and answers not_found: of two concurrent conversions of one intent,
   * exactly one creates a token. When the token's id is taken (id_conflict), writes nothing: the
   * intent stays. A duplicate answer consumes the intent (its data is now the existing token's).
   */
  convertTokenIntent(intentId: string, token: StoredToken, now: number, dedupeWithin?: readonly ContainerScope[]): Promise<ConvertTokenIntentResult>;
  /** Physically removes up to `limit` intents (any tenant) with expiresAt <= now; answers how many. */
  purgeExpiredTokenIntents(now: number, limit: number): Promise<number>;
}
