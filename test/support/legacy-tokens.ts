// Tokens as the version before the lean token layout wrote them (migrations 1-15), generated in
// bulk: every field takes its default, an explicit value or null across the set, so a migration
// test sees each case many times. `expected` is what the store must read back for each.
import { createHash } from 'node:crypto';
import type { StoredToken } from '../../src/storage/store.js';
import { TOKEN_TYPES } from '../../src/tokens/token-types.js';

export const LEGACY_TENANTS = ['0a0a0a0a-0000-4000-8000-00000000000a', '0b0b0b0b-0000-4000-8000-00000000000b', '0c0c0c0c-0000-4000-8000-00000000000c'];
/** The clock of the reads: tokens with expiresAt before it are expired (not read back), the others live. */
export const LEGACY_NOW = 1_700_000_500_000;
const T0 = 1_700_000_000_000;
const TYPES = ['card', 'bank', 'token', 'card_number', 'social_security_number'];

const digest = (text: string) => createHash('sha256').update(text).digest();

/** The token of index i, as the store read it back before (and must after). */
export function legacyToken(i: number): StoredToken & { seq: number } {
  const type = TYPES[i % TYPES.length]!;
  const definition = TOKEN_TYPES.get(type)!;
  const metadata: Record<string, string> = i % 4 === 0 ? {} : i % 3 === 0 ? { Customer: `C${i % 100}`, plan: i % 2 ? 'Gold' : 'free' } : { customer: `c${i % 100}` };
  const searched = i % 3 !== 1;
  return {
    seq: i + 1,
    tenantId: LEGACY_TENANTS[i % LEGACY_TENANTS.length]!,
    id: i % 2 === 0 ? `0190${String(i).padStart(4, '0').slice(-4)}-0000-7000-8000-${String(i).padStart(12, '0')}` : `custom-id-${i}`,
    type,
    ciphertext: Buffer.concat([digest(`ciphertext ${i}`), digest(`more ${i}`).subarray(0, i % 32)]),
    keyVersion: 1 + (i % 2),
    fingerprint: i % 10 === 0 ? null : i % 97 === 0 ? `fp-text-${i % 7}` : digest(`fingerprint ${i % 500}`).toString('base64url'),
    fingerprintExpression: i % 53 === 0 ? null : i % 7 === 0 ? '{{ data | stringify }}' : definition.defaultFingerprintExpression,
    mask: i % 11 === 0 ? null : i % 13 === 0 ? { shown: '{{ data | reveal_last: 2 }}' } : definition.defaultMask,
    containers: i % 9 === 0 ? ['/pci/low/', '/extra/'] : [definition.defaultContainer],
    metadata,
    searchIndexes: searched ? ['{{ data | stringify }}'] : [],
    searchHashes: !searched ? [] : i % 89 === 0 ? ['not-a-hash'] : [digest(`search ${i % 50}`).toString('base64url')],
    deduplicate: i % 5 === 0,
    createdBy: `app-${i % 4}`,
    createdAt: T0 + i,
    modifiedBy: i % 6 === 0 ? 'app-9' : null,
    modifiedAt: i % 6 === 0 ? T0 + i + 1 : null,
    expiresAt: i % 8 === 0 ? (i % 16 === 0 ? T0 + 5 : T0 + 10_000_000) : null,
    cvcPurgeAt: i % 10 === 1 ? T0 + 3_600_000 + (i % 3) : null,
  };
}

/** The values of one old `tokens` row, in LEGACY_INSERT's order. */
export function legacyRow(token: StoredToken & { seq: number }): unknown[] {
  return [
    token.seq,
    token.tenantId,
    token.id,
    token.type,
    token.ciphertext,
    token.keyVersion,
    token.fingerprint,
    token.fingerprintExpression,
    token.mask === null ? null : JSON.stringify(token.mask),
    JSON.stringify(token.containers),
    JSON.stringify(token.metadata),
    JSON.stringify(token.searchIndexes),
    JSON.stringify(token.searchHashes),
    token.deduplicate,
    token.createdBy,
    token.createdAt,
    token.modifiedBy,
    token.modifiedAt,
    token.expiresAt,
    token.cvcPurgeAt,
  ];
}

export const LEGACY_COLUMNS =
  'seq, tenant_id, id, type, ciphertext, key_version, fingerprint, fingerprint_expression, mask, containers, metadata, search_indexes, search_hashes, ' +
  'deduplicate, created_by, created_at, modified_by, modified_at, expires_at, cvc_purge_at';

/** The lower-cased metadata pairs of a token, as the filter matches them. */
export function pairsOf(token: StoredToken): [string, string][] {
  return [
    ...new Map(
      Object.entries(token.metadata).map(([k, v]) => [JSON.stringify([k.toLowerCase(), v.toLowerCase()]), [k.toLowerCase(), v.toLowerCase()] as [string, string]]),
    ).values(),
  ];
}

/** Whether the token is live at LEGACY_NOW. */
export const isLive = (token: StoredToken) => token.expiresAt === null || token.expiresAt > LEGACY_NOW;

/** A deleted token's reference (every 1000th index past the tokens). */
export const legacyDeleted = (i: number) => ({ tenantId: LEGACY_TENANTS[i % 3]!, id: `deleted-${i}`, type: 'card', deletedAt: T0 + i, deletedBy: `app-${i % 4}` });
