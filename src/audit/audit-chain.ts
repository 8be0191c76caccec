import { createHash, createHmac, hash, timingSafeEqual } from 'node:crypto';
import type { AuditChainHead, AuditCut, AuditEntry, AuditSeal, AuditSealer, StoredAuditEntry } from '../storage/store.js';

/** Operation of a checkpoint entry, written by retention (docs/audit.md). */
export const CHECKPOINT_OPERATION = 'audit:checkpoint';
/** Actor of checkpoint entries. */
export const RETENTION_ACTOR = 'system:audit-retention';
/** Operation of the first entry of a chain that follows entries older than it (docs/audit.md). */
export const CHAIN_START_OPERATION = 'audit:chain-start';
/** Actor of chain-start entries. */
export const CHAIN_ACTOR = 'system:audit';

/**
 * Where a tenant's chain starts: a hash of the tenant and the boundary of its entries older than
 * the chain, so the first entry's MAC also vouches for that boundary.
 */
export function genesisHash(tenantId: string, legacyThrough: number): Buffer {
  return createHash('sha256')
    .update(JSON.stringify(['tokenvault/audit-genesis/v1', tenantId, legacyThrough]), 'utf8')
    .digest();
}

/** Strings JSON.stringify writes as they are between quotes: no quote, backslash, control character or surrogate. */
const PLAIN_JSON_STRING = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/** JSON text of one field, exactly as JSON.stringify writes it, without its generic walk for the common cases. */
function jsonField(value: string | number | null): string {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (value === null) return 'null';
  return PLAIN_JSON_STRING.test(value) ? `"${value}"` : JSON.stringify(value);
}

/** Quotes the fields that may repeat from one entry to the next (slots 0-3: tenant, actor, operation, outcome). */
interface FieldQuoter {
  of(slot: number, value: string): string;
}

/** Each field quoted afresh: one entry's text alone (verification), with nothing kept between calls. */
const QUOTE_EACH: FieldQuoter = { of: (_slot, value) => jsonField(value) };

/**
 * The JSON text of the fields that repeat from one entry to the next in a batch (tenant, actor,
 * operation, outcome): each is quoted again only when it differs from the previous entry's, since
 * quoting (its check for characters JSON escapes) was most of the text's cost.
 */
class RepeatedFields implements FieldQuoter {
  #values: (string | null)[] = [null, null, null, null];
  #texts: string[] = ['', '', '', ''];

  of(slot: number, value: string): string {
    if (value !== this.#values[slot]) {
      this.#values[slot] = value;
      this.#texts[slot] = jsonField(value);
    }
    return this.#texts[slot]!;
  }
}

/**
 * The text an entry's hash covers: the previous entry's hash (hex), then the entry's every stored
 * field as a JSON array, its chain position and seq included (so an entry moved, renumbered or
 * copied no longer matches). JSON quoting keeps fields from running into each other. Built field
 * by field: equal to `previousHex + JSON.stringify([index, seq, tenantId, actor, operation,
 * resourceId, outcome, detail, at])` (test/audit/audit-chain-format.test.ts), at a fraction of the
 * CPU of the array's stringify, which ran for every audited read (docs/performance.md).
 */
export function linkText(previousHex: string, index: number, entry: StoredAuditEntry, repeated: FieldQuoter = QUOTE_EACH): string {
  return (
    previousHex +
    '[' +
    jsonField(index) +
    ',' +
    jsonField(entry.seq) +
    ',' +
    repeated.of(0, entry.tenantId) +
    ',' +
    repeated.of(1, entry.actor) +
    ',' +
    repeated.of(2, entry.operation) +
    ',' +
    jsonField(entry.resourceId) +
    ',' +
    repeated.of(3, entry.outcome) +
    ',' +
    jsonField(entry.detail) +
    ',' +
    jsonField(entry.at) +
    ']'
  );
}

/** An entry's hash (hex): one one-shot SHA-256 of linkText (a hash object per entry costs several times more). */
function linkHex(previousHex: string, index: number, entry: StoredAuditEntry, repeated?: FieldQuoter): string {
  return hash('sha256', linkText(previousHex, index, entry, repeated), 'hex');
}

/** The hashes (hex) of a run of entries following `previousHex` at positions after `index`, as the sealer makes them. */
export function linkHexes(previousHex: string, index: number, entries: readonly StoredAuditEntry[]): string[] {
  const repeated = new RepeatedFields();
  const hexes: string[] = new Array(entries.length);
  let previous = previousHex;
  for (let i = 0; i < entries.length; i++) hexes[i] = previous = linkHex(previous, index + i + 1, entries[i]!, repeated);
  return hexes;
}

export function entryHash(previous: Buffer, index: number, entry: StoredAuditEntry): Buffer {
  return Buffer.from(linkHex(previous.toString('hex'), index, entry), 'hex');
}

export function entryMac(key: Buffer, hash: Buffer): Buffer {
  return createHmac('sha256', key).update(hash).digest();
}

export function macMatches(key: Buffer, hash: Buffer, mac: Buffer): boolean {
  const expected = entryMac(key, hash);
  return mac.length === expected.length && timingSafeEqual(mac, expected);
}

/**
 * The detail of a checkpoint entry: what retention cut, so verification can start after it, and the
 * boundary of the entries older than the chain (`legacy_through`), which the cut may have taken the
 * chain-start entry with it (absent from checkpoints written before it was recorded).
 */
export interface CheckpointDetail {
  through: number;
  hash: string;
  removed: number;
  legacy_through?: number;
}

export function checkpointDetail(cut: AuditCut, legacyThrough: number): string {
  return JSON.stringify({ through: cut.through, hash: cut.hash.toString('hex'), removed: cut.removed, legacy_through: legacyThrough } satisfies CheckpointDetail);
}

/** The detail of a chain-start entry: the last seq of the entries older than the chain (its unverified prefix). */
export interface ChainStartDetail {
  legacy_through: number;
}

/** The boundary a chain-start entry records, or null when the entry is not one the vault wrote. */
export function parseChainStart(entry: AuditEntry): number | null {
  if (entry.operation !== CHAIN_START_OPERATION || entry.actor !== CHAIN_ACTOR || entry.detail === null) return null;
  try {
    const value = JSON.parse(entry.detail) as Partial<ChainStartDetail>;
    return Number.isSafeInteger(value.legacy_through) ? value.legacy_through! : null;
  } catch {
    return null;
  }
}

/** The detail of a checkpoint entry, or null when it is not one the vault wrote. */
export function parseCheckpoint(entry: AuditEntry): CheckpointDetail | null {
  if (entry.operation !== CHECKPOINT_OPERATION || entry.actor !== RETENTION_ACTOR || entry.detail === null) return null;
  try {
    const value = JSON.parse(entry.detail) as Partial<CheckpointDetail>;
    if (!Number.isSafeInteger(value.through) || typeof value.hash !== 'string' || !Number.isSafeInteger(value.removed)) return null;
    if (value.legacy_through !== undefined && !Number.isSafeInteger(value.legacy_through)) return null;
    return value as CheckpointDetail;
  } catch {
    return null;
  }
}

/**
 * The sealer the stores call inside their transactions (AuditSealer), over MAC keys already
 * unwrapped (sealing runs inside a transaction and cannot wait for a key provider).
 */
export function chainSealer(keys: ReadonlyMap<string, Buffer>, tenants: readonly string[], now: number): AuditSealer {
  return {
    tenants,
    seal(head: AuditChainHead, entries: readonly StoredAuditEntry[]): AuditSeal[] {
      const key = keys.get(head.tenantId);
      if (key === undefined) throw new Error('No audit key loaded for the tenant');
      const hexes = linkHexes((head.hash ?? genesisHash(head.tenantId, head.legacyThrough)).toString('hex'), head.index, entries);
      // One Buffer for the batch's hashes, each seal a 32-byte view of it: a Buffer.from per entry
      // was much of the chain's work on the request thread (docs/performance.md).
      const bytes = Buffer.from(hexes.join(''), 'hex');
      const seals: AuditSeal[] = new Array(entries.length);
      for (let i = 0; i < entries.length; i++) seals[i] = { index: head.index + i + 1, hash: bytes.subarray(i * 32, i * 32 + 32), mac: null };
      // One MAC per batch, on its last entry: it vouches for every hash before it (each commits to
      // its predecessor), at a fraction of a MAC per entry (docs/audit.md).
      const last = seals[seals.length - 1];
      if (last !== undefined) last.mac = entryMac(key, last.hash);
      return seals;
    },
    checkpoint(head: AuditChainHead, cut: AuditCut): AuditEntry {
      return {
        tenantId: head.tenantId,
        actor: RETENTION_ACTOR,
        operation: CHECKPOINT_OPERATION,
        resourceId: null,
        outcome: 'success',
        detail: checkpointDetail(cut, head.legacyThrough),
        at: now,
      };
    },
    start(head: AuditChainHead): AuditEntry {
      const detail = JSON.stringify({ legacy_through: head.legacyThrough } satisfies ChainStartDetail);
      return { tenantId: head.tenantId, actor: CHAIN_ACTOR, operation: CHAIN_START_OPERATION, resourceId: null, outcome: 'success', detail, at: now };
    },
  };
}
