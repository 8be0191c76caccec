import type { StoredToken } from '../store.js';
import { LEAN_COLUMN_NAMES, leanValues, tokenFields } from '../token-columns.js';

/** A tokens row as better-sqlite3 returns it (BLOBs come back as Buffer); `tenant_id` only where a query joins it. */
export interface TokenRow {
  seq: number;
  tenant_id?: string;
  id: string;
  type: string;
  ciphertext: Buffer;
  key_version: number;
  fingerprint: Buffer | null;
  fingerprint_expression: string | null;
  mask: string | null;
  containers: string | null;
  metadata: string | null;
  search_indexes: string | null;
  search_hashes: Buffer | null;
  flags: number;
  created_by: string;
  created_at: number;
  modified_by: string | null;
  modified_at: number | null;
  expires_at: number | null;
  cvc_purge_at: number | null;
}

/** A token's columns after its identity (seq, tenant, id), in the order tokenFromValues reads them. */
export const TOKEN_BODY_COLUMNS =
  't.type, t.ciphertext, t.key_version, t.fingerprint, t.fingerprint_expression, t.mask, t.containers, t.metadata, ' +
  't.search_indexes, t.search_hashes, t.flags, t.created_by, t.created_at, t.modified_by, t.modified_at, t.expires_at, t.cvc_purge_at';

/** Every column of a token but its tenant, for `SELECT ... FROM tokens t` within one tenant. */
export const TOKEN_COLUMNS = `t.seq, t.id, ${TOKEN_BODY_COLUMNS}`;

/** Every column of a token with its tenant's id, for queries across tenants (`JOIN tenant_keys n ON n.key = t.tenant`). */
export const TOKEN_COLUMNS_WITH_TENANT = `t.seq, n.id AS tenant_id, t.id, ${TOKEN_BODY_COLUMNS}`;

/** A token from a row object; `tenantId` when the query did not join it. */
export function toStoredToken(row: TokenRow, tenantId = row.tenant_id!): StoredToken {
  return {
    tenantId,
    id: row.id,
    type: row.type,
    ciphertext: row.ciphertext,
    keyVersion: row.key_version,
    ...tokenFields(row.type, row.fingerprint, row.fingerprint_expression, row.mask, row.containers, row.metadata, row.search_indexes, row.search_hashes, row.flags),
    createdBy: row.created_by,
    createdAt: row.created_at,
    modifiedBy: row.modified_by,
    modifiedAt: row.modified_at,
    expiresAt: row.expires_at,
    cvcPurgeAt: row.cvc_purge_at,
  };
}

/**
 * A token from its identity and the values of TOKEN_BODY_COLUMNS as an array: what a statement in
 * raw mode returns. Reading rows as arrays skips building a 20-property object per row, and a get
 * by id does not read back the tenant and id it was given (each text column read costs a string).
 */
export function tokenFromValues(tenantId: string, id: string, v: readonly unknown[]): StoredToken {
  const type = v[0] as string;
  return {
    tenantId,
    id,
    type,
    ciphertext: v[1] as Buffer,
    keyVersion: v[2] as number,
    ...tokenFields(
      type,
      v[3] as Buffer | null,
      v[4] as string | null,
      v[5] as string | null,
      v[6] as string | null,
      v[7] as string | null,
      v[8] as string | null,
      v[9] as Buffer | null,
      v[10] as number,
    ),
    createdBy: v[11] as string,
    createdAt: v[12] as number,
    modifiedBy: v[13] as string | null,
    modifiedAt: v[14] as number | null,
    expiresAt: v[15] as number | null,
    cvcPurgeAt: v[16] as number | null,
  };
}

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
