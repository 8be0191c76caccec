import { createHash } from 'node:crypto';
import { metadataPairs } from '../sqlite/token-rows.js';
import type { StoredToken } from '../store.js';
import { mutableTokenValues as sharedMutableTokenValues } from '../token-values.js';

// Token rows as the store's type parsers return them (type-parsers.ts: bytea → Buffer, bigint →
// number, json → parsed), and the parameters that write them.

/** Every column of a token, for `SELECT ... FROM tokens t`. */
export const TOKEN_COLUMNS =
  't.seq, t.tenant_id, t.id, t.type, t.ciphertext, t.key_version, t.fingerprint, t.fingerprint_expression, t.mask, ' +
  't.containers, t.metadata, t.search_indexes, t.search_hashes, t.deduplicate, t.created_by, t.created_at, ' +
  't.modified_by, t.modified_at, t.expires_at, t.cvc_purge_at';

export function toStoredToken(row: Record<string, unknown>): StoredToken {
  return {
    tenantId: row['tenant_id'] as string,
    id: row['id'] as string,
    type: row['type'] as string,
    ciphertext: row['ciphertext'] as Buffer,
    keyVersion: row['key_version'] as number,
    fingerprint: row['fingerprint'] as string | null,
    fingerprintExpression: row['fingerprint_expression'] as string | null,
    mask: row['mask'] ?? null,
    containers: row['containers'] as string[],
    metadata: row['metadata'] as Record<string, string>,
    searchIndexes: row['search_indexes'] as string[],
    searchHashes: row['search_hashes'] as string[],
    deduplicate: row['deduplicate'] as boolean,
    createdBy: row['created_by'] as string,
    createdAt: row['created_at'] as number,
    modifiedBy: row['modified_by'] as string | null,
    modifiedAt: row['modified_at'] as number | null,
    expiresAt: row['expires_at'] as number | null,
    cvcPurgeAt: row['cvc_purge_at'] as number | null,
  };
}

/**
 * The columns an update replaces (everything but the identity and the creation stamp), each with
 * the SQL type its parameter is cast to: an INSERT ... SELECT does not infer parameter types from
 * the target columns.
 */
export const MUTABLE_TOKEN_COLUMNS: readonly (readonly [column: string, type: string])[] = Object.freeze([
  ['type', 'text'],
  ['ciphertext', 'bytea'],
  ['key_version', 'int4'],
  ['fingerprint', 'text'],
  ['fingerprint_expression', 'text'],
  ['mask', 'json'],
  ['containers', 'jsonb'],
  ['metadata', 'json'],
  ['search_indexes', 'json'],
  ['search_hashes', 'json'],
  ['deduplicate', 'boolean'],
  ['modified_by', 'text'],
  ['modified_at', 'int8'],
  ['expires_at', 'int8'],
  ['cvc_purge_at', 'int8'],
] as const);

/** The values of MUTABLE_TOKEN_COLUMNS, in order. */
export function mutableTokenValues(token: StoredToken): unknown[] {
  return sharedMutableTokenValues(token, (flag) => flag);
}

/**
 * The digest a lower-cased metadata pair is indexed by (migrations.ts). Pairs are lower-cased and
 * de-duplicated exactly as the SQLite store does, so both stores match the same filters.
 */
export function pairDigest(key: string, value: string): Buffer {
  return createHash('sha256')
    .update(JSON.stringify([key, value]), 'utf8')
    .digest();
}

/** The token_metadata rows of a metadata map (and the terms of a metadata filter). */
export function metadataDigests(metadata: Record<string, string> | null | undefined): Buffer[] {
  return metadataPairs(metadata ?? {}).map(([key, value]) => pairDigest(key, value));
}

/** Distinct values, in first-seen order. */
export const distinct = (values: readonly string[] | null | undefined): string[] => [...new Set((values ?? []).map(String))];
