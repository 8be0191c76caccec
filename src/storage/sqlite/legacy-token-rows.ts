import type { StoredToken } from '../store.js';

/** A row of the token layout before the lean one (migrations 1-15), as the lean migration reads it. */
export interface LegacyTokenRow {
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

export const LEGACY_TOKEN_COLUMNS =
  't.tenant_id, t.id, t.type, t.ciphertext, t.key_version, t.fingerprint, t.fingerprint_expression, t.mask, t.containers, t.metadata, ' +
  't.search_indexes, t.search_hashes, t.deduplicate, t.created_by, t.created_at, t.modified_by, t.modified_at, t.expires_at, t.cvc_purge_at';

/** The token an old row stands for (every field was written out in full). */
export function legacyToken(row: LegacyTokenRow): StoredToken {
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
