import type { StoredToken } from '../store.js';

/** A tokens row as better-sqlite3 returns it (BLOBs come back as Buffer). */
export interface TokenRow {
  seq: number;
  tenant_id: string;
  id: string;
  type: string;
  ciphertext: Buffer;
  key_version: number;
  fingerprint: string | null;
  fingerprint_expression: string | null;
  mask: string | null;
  containers: string;
  metadata: string;
  search_indexes: string;
  search_hashes: string;
  deduplicate: number;
  created_by: string;
  created_at: number;
  modified_by: string | null;
  modified_at: number | null;
  expires_at: number | null;
  cvc_purge_at: number | null;
}

/** Every column of a token, for `SELECT ... FROM tokens t`. */
export const TOKEN_COLUMNS =
  't.seq, t.tenant_id, t.id, t.type, t.ciphertext, t.key_version, t.fingerprint, t.fingerprint_expression, t.mask, ' +
  't.containers, t.metadata, t.search_indexes, t.search_hashes, t.deduplicate, t.created_by, t.created_at, ' +
  't.modified_by, t.modified_at, t.expires_at, t.cvc_purge_at';

/** A token from a row object (list and transaction queries). */
export function toStoredToken(row: TokenRow): StoredToken {
  return tokenFromValues([
    row.seq, row.tenant_id, row.id, row.type, row.ciphertext, row.key_version, row.fingerprint, row.fingerprint_expression,
    row.mask, row.containers, row.metadata, row.search_indexes, row.search_hashes, row.deduplicate, row.created_by,
    row.created_at, row.modified_by, row.modified_at, row.expires_at, row.cvc_purge_at,
  ]);
}

/**
 * A token from a row as an array in TOKEN_COLUMNS order: what a statement in raw mode returns.
 * Reading rows as arrays skips building a 20-property object per row (measured here: a full-row
 * get by id 12-15 µs as an object, 7-9 µs as an array).
 */
export function tokenFromValues(v: readonly unknown[]): StoredToken {
  return {
    tenantId: v[1] as string,
    id: v[2] as string,
    type: v[3] as string,
    ciphertext: v[4] as Buffer,
    keyVersion: v[5] as number,
    fingerprint: v[6] as string | null,
    fingerprintExpression: v[7] as string | null,
    mask: v[8] === null ? null : JSON.parse(v[8] as string),
    containers: JSON.parse(v[9] as string) as string[],
    metadata: JSON.parse(v[10] as string) as Record<string, string>,
    searchIndexes: JSON.parse(v[11] as string) as string[],
    searchHashes: JSON.parse(v[12] as string) as string[],
    deduplicate: v[13] === 1,
    createdBy: v[14] as string,
    createdAt: v[15] as number,
    modifiedBy: v[16] as string | null,
    modifiedAt: v[17] as number | null,
    expiresAt: v[18] as number | null,
    cvcPurgeAt: v[19] as number | null,
  };
}

/** The mutable columns in the order of `MUTABLE_TOKEN_COLUMNS`. */
export function mutableTokenValues(token: StoredToken): unknown[] {
  return [
    token.type,
    token.ciphertext,
    token.keyVersion,
    token.fingerprint ?? null,
    token.fingerprintExpression ?? null,
    token.mask === null || token.mask === undefined ? null : JSON.stringify(token.mask),
    JSON.stringify(token.containers ?? []),
    JSON.stringify(token.metadata ?? {}),
    JSON.stringify(token.searchIndexes ?? []),
    JSON.stringify(token.searchHashes ?? []),
    token.deduplicate ? 1 : 0,
    token.modifiedBy ?? null,
    token.modifiedAt ?? null,
    token.expiresAt ?? null,
    token.cvcPurgeAt ?? null,
  ];
}

/**
 * Columns an update replaces: everything but the identity (tenant, id) and the creation stamp
 * (createdBy, createdAt).
 */
export const MUTABLE_TOKEN_COLUMNS = [
  'type',
  'ciphertext',
  'key_version',
  'fingerprint',
  'fingerprint_expression',
  'mask',
  'containers',
  'metadata',
  'search_indexes',
  'search_hashes',
  'deduplicate',
  'modified_by',
  'modified_at',
  'expires_at',
  'cvc_purge_at',
] as const;

/** Lower-cased, de-duplicated metadata pairs: the rows of token_metadata and the terms of a filter. */
export function metadataPairs(metadata: Record<string, string>): [string, string][] {
  const seen = new Set<string>();
  const pairs: [string, string][] = [];
  for (const [key, value] of Object.entries(metadata ?? {})) {
    const pair: [string, string] = [key.toLowerCase(), String(value).toLowerCase()];
    const id = JSON.stringify(pair);
    if (!seen.has(id)) {
      seen.add(id);
      pairs.push(pair);
    }
  }
  return pairs;
}
