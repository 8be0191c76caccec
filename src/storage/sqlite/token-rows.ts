import type { StoredToken } from '../store.js';
import { LEAN_COLUMN_NAMES, leanValues, tokenFields } from '../token-columns.js';
import { TOKEN_BODY_COLUMNS } from '../areas/token-rows.js';

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

/**
 * TOKEN_BODY_COLUMNS for the read by id, its BLOBs read as hex text: better-sqlite3 answers a BLOB
 * with a Buffer holding memory of its own (allocated, then freed by the garbage collector's
 * sweeper), which costs more than the text and the pooled Buffer decoded from it
 * (docs/performance.md, "Figures behind the code's choices").
 */
export const TOKEN_BODY_VALUES = TOKEN_BODY_COLUMNS.replace(/\bt\.(ciphertext|fingerprint|search_hashes)\b/g, 'hex(t.$1)');

/** The seq and id, then TOKEN_BODY_VALUES: what SQLite's lists and deduplication probe read (tokenFromRow). */
export const TOKEN_ROW_VALUES = `t.seq, t.id, ${TOKEN_BODY_VALUES}`;

/** A BLOB read through hex(): a stored value is never empty, and hex(NULL) is the empty text. */
const fromHex = (text: string): Buffer | null => (text === '' ? null : Buffer.from(text, 'hex'));

/**
 * A token from its identity and the values of TOKEN_BODY_VALUES from position `at` of a row read
 * in raw mode (the read by id reads them alone: it does not read back the tenant and id it was
 * given, and each text column read costs a string). Reading rows as arrays skips building a
 * 20-property object per row.
 */
export function tokenFromValues(tenantId: string, id: string, row: readonly unknown[], at = 0): StoredToken {
  const v = (n: number) => row[at + n];
  const type = v(0) as string;
  return {
    tenantId,
    id,
    type,
    ciphertext: Buffer.from(v(1) as string, 'hex'),
    keyVersion: v(2) as number,
    ...tokenFields(
      type,
      fromHex(v(3) as string),
      v(4) as string | null,
      v(5) as string | null,
      v(6) as string | null,
      v(7) as string | null,
      v(8) as string | null,
      fromHex(v(9) as string),
      v(10) as number,
    ),
    createdBy: v(11) as string,
    createdAt: v(12) as number,
    modifiedBy: v(13) as string | null,
    modifiedAt: v(14) as number | null,
    expiresAt: v(15) as number | null,
    cvcPurgeAt: v(16) as number | null,
  };
}

/** A token from a row of TOKEN_ROW_VALUES read in raw mode. */
export function tokenFromRow(tenantId: string, row: readonly unknown[]): StoredToken {
  return tokenFromValues(tenantId, row[1] as string, row, 2);
}
