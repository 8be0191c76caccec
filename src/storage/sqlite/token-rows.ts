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

export function toStoredToken(row: TokenRow): StoredToken {
  return {
    tenantId: row.tenant_id,
    id: row.id,
    type: row.type,
    ciphertext: row.ciphertext,
    keyVersion: row.key_version,
    fingerprint: row.fingerprint,
    fingerprintExpression: row.fingerprint_expression,
    mask: row.mask === null ? null : JSON.parse(row.mask),
    containers: JSON.parse(row.containers) as string[],
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    searchIndexes: JSON.parse(row.search_indexes) as string[],
    searchHashes: JSON.parse(row.search_hashes) as string[],
    deduplicate: row.deduplicate === 1,
    createdBy: row.created_by,
    createdAt: row.created_at,
    modifiedBy: row.modified_by,
    modifiedAt: row.modified_at,
    expiresAt: row.expires_at,
    cvcPurgeAt: row.cvc_purge_at,
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
