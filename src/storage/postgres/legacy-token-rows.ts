import type { StoredToken } from '../store.js';

// Token rows of the layout before the lean one (migrations 1-17), as the store's type parsers
// return them (type-parsers.ts: bytea → Buffer, bigint → number, json → parsed): what the lean
// migration reads (migration-lean-tokens.ts).

/** Every column of an old token row, for `SELECT ... FROM tokens t`. */
export const LEGACY_TOKEN_COLUMNS =
  't.seq, t.tenant_id, t.id, t.type, t.ciphertext, t.key_version, t.fingerprint, t.fingerprint_expression, t.mask, ' +
  't.containers, t.metadata, t.search_indexes, t.search_hashes, t.deduplicate, t.created_by, t.created_at, ' +
  't.modified_by, t.modified_at, t.expires_at, t.cvc_purge_at';

/** The token an old row stands for (every field was written out in full). */
export function legacyToken(row: Record<string, unknown>): StoredToken {
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
