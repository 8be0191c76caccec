import { createHash } from 'node:crypto';
import { metadataPairs } from '../areas/token-rows.js';
import type { StoredToken } from '../store.js';
import { hashBytes } from '../token-bytes.js';
import { LEAN_COLUMN_NAMES, leanValues } from '../token-columns.js';

// The parameters that write PostgreSQL's token rows (migration-lean-tokens.ts): the columns shared
// with SQLite (defaults left NULL, hashes as bytes) are token-columns.ts's, read back by
// areas/token-rows.ts; `lookup` is PostgreSQL's own.

/**
 * The columns an update replaces (everything but the identity and the creation stamp), each with
 * the SQL type its parameter is cast to: an INSERT ... SELECT does not infer parameter types from
 * the target columns. `lookup` holds the token's lookup keys (lookupKeys).
 */
export const MUTABLE_TOKEN_COLUMNS: readonly (readonly [column: string, type: string])[] = Object.freeze([
  ['type', 'text'],
  ['ciphertext', 'bytea'],
  ['key_version', 'int4'],
  ...LEAN_COLUMN_NAMES.map((column) => [column, column === 'fingerprint' || column === 'search_hashes' ? 'bytea' : column === 'flags' ? 'int2' : 'text'] as const),
  ['lookup', 'bytea'],
  ['modified_by', 'text'],
  ['modified_at', 'int8'],
  ['expires_at', 'int8'],
  ['cvc_purge_at', 'int8'],
] as const);

/** The values of MUTABLE_TOKEN_COLUMNS, in order. */
export function mutableTokenValues(token: StoredToken): unknown[] {
  return [
    token.type,
    token.ciphertext,
    token.keyVersion,
    ...leanValues(token),
    lookupKeys(token.metadata, token.searchHashes),
    token.modifiedBy ?? null,
    token.modifiedAt ?? null,
    token.expiresAt ?? null,
    token.cvcPurgeAt ?? null,
  ];
}

/** Bytes of one lookup key (before the tenant's 4 bytes that token_lookup_keys puts in front). */
export const LOOKUP_KEY_BYTES = 32;

/**
 * The digest a lower-cased metadata pair (metadataPairs) is looked up by: a fixed 32 bytes keeps a
 * 1024-character value's key small.
 */
export function pairDigest(key: string, value: string): Buffer {
  return createHash('sha256')
    .update(JSON.stringify([key, value]), 'utf8')
    .digest();
}

/** A search value's key: the blind index value's 32 bytes, or a digest of a value that is not one. */
function searchKey(value: string): Buffer {
  const bytes = hashBytes(value);
  return bytes.length === LOOKUP_KEY_BYTES ? bytes : createHash('sha256').update('search\u0000').update(bytes).digest();
}

/**
 * A token's lookup keys, the GIN index's entries (migration-lean-tokens.ts), as one value: its
 * metadata pairs' digests, then its distinct search values' keys, 32 bytes each; null for none. A
 * filter's terms are built the same way, so a list by metadata or search value is one `@>` test.
 */
export function lookupKeys(metadata: Record<string, string> | null | undefined, searchHashes: readonly string[] | null | undefined): Buffer | null {
  const keys = [...metadataPairs(metadata ?? {}).map(([key, value]) => pairDigest(key, value)), ...distinct(searchHashes).map(searchKey)];
  return keys.length === 0 ? null : Buffer.concat(keys);
}

/** Distinct values, in first-seen order. */
export const distinct = (values: readonly string[] | null | undefined): string[] => [...new Set((values ?? []).map(String))];
