import type { StoredToken } from '../store.js';
import { LEAN_COLUMN_NAMES, leanValues } from '../token-columns.js';

/**
 * Columns an update replaces: everything but the identity (tenant, id) and the creation stamp
 * (createdBy, createdAt).
 */
export const MUTABLE_TOKEN_COLUMNS = ['type', 'ciphertext', 'key_version', ...LEAN_COLUMN_NAMES, 'modified_by', 'modified_at', 'expires_at', 'cvc_purge_at'] as const;

/** The mutable columns in the order of `MUTABLE_TOKEN_COLUMNS`. */
export function mutableTokenValues(token: StoredToken): unknown[] {
  return [
    token.type,
    token.ciphertext,
    token.keyVersion,
    ...leanValues(token),
    token.modifiedBy ?? null,
    token.modifiedAt ?? null,
    token.expiresAt ?? null,
    token.cvcPurgeAt ?? null,
  ];
}
