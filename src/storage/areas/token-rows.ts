import type { StoredToken } from '../store.js';
import type { Row } from '../sql/operation.js';
import { tokenFields } from '../token-columns.js';

// Token rows as both stores read them: the lean layout's columns (token-columns.ts) are named and
// typed alike on both (BLOB and bytea come back as Buffer, integers as numbers).

/** A token's columns after its identity (seq, tenant, id), in the order SQLite's read by id (sqlite/token-rows.ts) reads them. */
export const TOKEN_BODY_COLUMNS =
  't.type, t.ciphertext, t.key_version, t.fingerprint, t.fingerprint_expression, t.mask, t.containers, t.metadata, ' +
  't.search_indexes, t.search_hashes, t.flags, t.created_by, t.created_at, t.modified_by, t.modified_at, t.expires_at, t.cvc_purge_at';

/** Every column of a token but its tenant, for `SELECT ... FROM tokens t` (rows carry the tenant's integer key, not its id). */
export const TOKEN_COLUMNS = `t.seq, t.id, ${TOKEN_BODY_COLUMNS}`;

/** A token from its row; `tenantId` is the tenant the query named, or the row's `tenant_id` where a query joins it. */
export function toStoredToken(row: Row, tenantId = row['tenant_id'] as string): StoredToken {
  const type = row['type'] as string;
  return {
    tenantId,
    id: row['id'] as string,
    type,
    ciphertext: row['ciphertext'] as Buffer,
    keyVersion: row['key_version'] as number,
    ...tokenFields(
      type,
      row['fingerprint'] as Buffer | null,
      row['fingerprint_expression'] as string | null,
      row['mask'] as string | null,
      row['containers'] as string | null,
      row['metadata'] as string | null,
      row['search_indexes'] as string | null,
      row['search_hashes'] as Buffer | null,
      row['flags'] as number,
    ),
    createdBy: row['created_by'] as string,
    createdAt: row['created_at'] as number,
    modifiedBy: row['modified_by'] as string | null,
    modifiedAt: row['modified_at'] as number | null,
    expiresAt: row['expires_at'] as number | null,
    cvcPurgeAt: row['cvc_purge_at'] as number | null,
  };
}

/**
 * Lower-cased, de-duplicated metadata pairs: what a token is found by (SQLite's token_metadata rows,
 * PostgreSQL's lookup keys) and the terms of a filter. Lower-cased in JavaScript, whatever the
 * database's locale, so both stores match the same filters.
 */
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
