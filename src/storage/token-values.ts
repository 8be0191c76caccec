import { isDeepFrozen } from '../common/frozen.js';
import type { ContainerScope, StoredToken } from './store.js';

/**
 * The values of a token's mutable columns, in the order both stores declare them (type, ciphertext,
 * key_version, fingerprint, fingerprint_expression, mask, containers, metadata, search_indexes,
 * search_hashes, deduplicate, modified_by, modified_at, expires_at, cvc_purge_at), JSON columns as
 * text. `flag` encodes the boolean as the store's column takes it.
 */
export function mutableTokenValues(token: StoredToken, flag: (value: boolean) => unknown): unknown[] {
  return [
    token.type,
    token.ciphertext,
    token.keyVersion,
    token.fingerprint ?? null,
    token.fingerprintExpression ?? null,
    maskText(token.mask),
    JSON.stringify(token.containers ?? []),
    JSON.stringify(token.metadata ?? {}),
    JSON.stringify(token.searchIndexes ?? []),
    JSON.stringify(token.searchHashes ?? []),
    flag(token.deduplicate === true),
    token.modifiedBy ?? null,
    token.modifiedAt ?? null,
    token.expiresAt ?? null,
    token.cvcPurgeAt ?? null,
  ];
}

/** JSON text of deeply frozen masks (type defaults, masks read back), kept rather than written again. */
const maskTexts = new WeakMap<object, string>();

export function maskText(mask: unknown): string | null {
  if (mask === null || mask === undefined) return null;
  if (typeof mask !== 'object' || !isDeepFrozen(mask)) return JSON.stringify(mask);
  let text = maskTexts.get(mask);
  if (text === undefined) {
    text = JSON.stringify(mask);
    maskTexts.set(mask, text);
  }
  return text;
}

/**
 * Access scopes (TokenFilter.within, a deduplication's `dedupeWithin`) as both stores bind them:
 * one JSON array of `[prefix, [except, …]]`, so the SQL is fixed; null when none is given.
 */
export function scopesParam(scopes: readonly ContainerScope[] | undefined): string | null {
  return scopes === undefined ? null : JSON.stringify(scopes.map((scope) => [scope.prefix, scope.except]));
}
