import * as crypto from 'node:crypto';
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { ApplicationKeyRecord, SessionGrants } from '../storage/store.js';

/** The prefix makes a leaked key recognizable to secret scanners. */
const KEY_PREFIX = 'tv_';
/** Session keys carry their own prefix, so authentication looks in the sessions table only for them. */
export const SESSION_KEY_PREFIX = 'tvs_';
/** Keys given by an operator (TOKENVAULT_ADMIN_KEY) must carry at least this much. */
export const MIN_KEY_LENGTH = 24;

/** A new API key: 32 random bytes (256 bits), base64url. Shown once; only its hash is stored. */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** A new key of an application: its record (hash only) and the key itself, to show once. `given`: an operator's key. */
export function newApplicationKey(
  app: { tenantId: string; id: string },
  createdBy: string | null,
  now: number,
  grants: SessionGrants | null,
  given?: string,
): { record: ApplicationKeyRecord; key: string } {
  const key = given ?? generateApiKey();
  return { record: { id: randomUUID(), tenantId: app.tenantId, applicationId: app.id, ...hashApiKey(key), createdBy, createdAt: now, grants }, key };
}

/** A new session key: as an API key, with the session prefix. */
export function generateSessionKey(): string {
  return SESSION_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** A session nonce: 32 random bytes, base64url. Stored only as its SHA-256. */
export function generateNonce(): string {
  return randomBytes(32).toString('base64url');
}

/** SHA-256 (hex) of a nonce: the stored form, looked up exactly. */
export function hashNonce(nonce: string): string {
  return sha256Hex(nonce);
}

/**
 * SHA-256 of the key. A fast hash suffices because generated keys carry 256 bits of entropy (there
 * is nothing to brute-force); operator-chosen keys must be at least 24 characters.
 */
export function hashApiKey(key: string): { keyHash: string; keyLookup: string } {
  const keyHash = sha256Hex(key);
  return { keyHash, keyLookup: keyHash.slice(0, 16) };
}

/** Constant-time comparison of two hex hashes of equal length. */
export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Every authenticated request hashes its key: the one-shot `crypto.hash` (Node 20.12+) costs a third
 * of a Hash object's creation, update and digest; older Node 20 releases use the latter.
 */
const sha256Hex: (text: string) => string =
  typeof crypto.hash === 'function' ? (text) => crypto.hash('sha256', text, 'hex') : (text) => createHash('sha256').update(text, 'utf8').digest('hex');
