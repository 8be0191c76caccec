import type { AuditChainHead, ChainedAuditEntry, Store } from '../storage/store.js';
import { type CheckpointDetail, entryHash, genesisHash, macMatches, parseChainStart, parseCheckpoint } from './audit-chain.js';

/** What broke a chain first: the kind, and the entry it names (chain position and seq, when it has them). */
export interface AuditBreak {
  kind: 'changed' | 'forged' | 'removed' | 'inserted' | 'unsealed' | 'head';
  /** Chain position of the entry named (or of the first one missing). */
  index: number | null;
  seq: number | null;
  message: string;
}

/** One tenant's verification. */
export interface TenantAuditVerification {
  tenantId: string;
  /** Sealed entries whose hash and MAC were checked. */
  verified: number;
  /** Entries written before the chain existed: kept, but nothing vouches for them. */
  unverifiedPrefix: number;
  /** Unsealed entries younger than the grace: a running vault seals them within its flush interval. */
  pendingSeal: number;
  /** The chain position retention last cut through (0: never). */
  cutThrough: number;
  /** The head as stored (position, hash in hex): note it to detect a later truncation of the chain's end. */
  head: { index: number; hash: string | null };
  /** The first problem found; null when the chain is intact. */
  broken: AuditBreak | null;
}

export interface VerifyAuditOptions {
  /** The tenant's MAC key (the key ring's). */
  auditKey: (tenantId: string) => Promise<Buffer>;
  now: number;
  /** An unsealed entry younger than this is waiting for its flush, not a break (default 60 s). */
  pendingGraceMs?: number;
  pageSize?: number;
}

const PAGE = 1000;

/**
 * Walks one tenant's chain in position order, checking each entry's hash (the previous entry's
 * hash and its own fields), each batch's MAC (by a key the database does not hold: it vouches for
 * every hash before it), and that positions follow
 * one another from the start (or from retention's checkpoint) to the head; then checks that every
 * unsealed entry is older than the chain or waiting for its flush. Names the first problem.
 */
export async function verifyTenantAudit(store: Store, tenantId: string, options: VerifyAuditOptions): Promise<TenantAuditVerification> {
  const page = options.pageSize ?? PAGE;
  const head: AuditChainHead = (await store.auditHead(tenantId)) ?? { tenantId, index: 0, hash: null, legacyThrough: 0 };
  const result: TenantAuditVerification = {
    tenantId,
    verified: 0,
    unverifiedPrefix: 0,
    pendingSeal: 0,
    cutThrough: 0,
    head: { index: head.index, hash: head.hash?.toString('hex') ?? null },
    broken: null,
  };
  const fail = (kind: AuditBreak['kind'], entry: { index: number | null; seq: number | null }, message: string) => {
    result.broken ??= { kind, index: entry.index, seq: entry.seq, message };
  };
  const first = await store.readAuditChain(tenantId, 0, 1);
  let previous = genesisHash(tenantId, head.legacyThrough);
  let expected = 1;
  if (first.length > 0 && first[0]!.seal!.index > 1) {
    const cut = await latestCheckpoint(store, tenantId, page);
    if (cut === null) {
      fail('removed', { index: 1, seq: null }, `entries 1 to ${first[0]!.seal!.index - 1} were removed (no checkpoint records a cut)`);
    } else {
      result.cutThrough = cut.through;
      previous = Buffer.from(cut.hash, 'hex');
      expected = cut.through + 1;
      if (cut.legacy_through !== undefined) checkBoundary(head, cut.legacy_through, "retention's checkpoint", fail);
    }
  } else if (first.length > 0) {
    // The chain-start entry (first, when older entries precede the chain) records the boundary.
    const started = parseChainStart(first[0]!);
    if (started !== null) checkBoundary(head, started, `the chain-start entry #1 (seq ${first[0]!.seq})`, fail);
  } else if (head.legacyThrough > 0) {
    // The boundary of the unverified prefix carries no MAC of its own: it is vouched for by the
    // chain that follows it (its first hash covers it, and the chain-start entry records it). With
    // no chain at all, nothing does: a database writer could have raised it and cleared the seals.
    fail(
      'head',
      { index: 0, seq: null },
      `the chain head marks entries up to seq ${head.legacyThrough} as older than the chain, and no sealed entry vouches for that: ` +
        'the boundary was raised or the chain cleared (a vault seals the boundary at its first flush or sweep after the migration)',
    );
  }
  const key = first.length > 0 ? await options.auditKey(tenantId) : null;
  let after = 0;
  /** The last position whose MAC was checked: every hash up to it is vouched for. */
  let lastMac = expected - 1;
  walk: while (result.broken === null) {
    const rows = await store.readAuditChain(tenantId, after, page);
    for (const row of rows) {
      const seal = row.seal!;
      after = seal.index;
      const named = { index: seal.index, seq: row.seq };
      if (seal.index < expected) {
        fail('inserted', named, `entry #${seal.index} (seq ${row.seq}) should have been removed by the checkpoint through #${expected - 1}: inserted`);
        break walk;
      }
      if (seal.index > expected) {
        fail('removed', { index: expected, seq: null }, expected === seal.index - 1 ? `entry #${expected} was removed` : `entries #${expected} to #${seal.index - 1} were removed`);
        break walk;
      }
      if (!entryHash(previous, seal.index, row).equals(seal.hash)) {
        fail('changed', named, `entry #${seal.index} (seq ${row.seq}) was changed, moved from another place in the chain, or inserted`);
        break walk;
      }
      if (seal.mac !== null) {
        if (!macMatches(key!, seal.hash, seal.mac)) {
          const from = lastMac + 1 < seal.index ? `, or an entry from #${lastMac + 1} on was changed with the hashes after it recomputed` : '';
          fail('forged', named, `entry #${seal.index} (seq ${row.seq}) does not carry the vault's MAC: its seal was made up${from}`);
          break walk;
        }
        lastMac = seal.index;
      }
      previous = seal.hash;
      expected++;
      result.verified++;
    }
    if (rows.length < page) break;
  }
  if (result.broken === null) checkHead(head, expected - 1, previous, fail);
  if (result.broken === null && lastMac < expected - 1) {
    // Every sealed batch ends with a MAC: entries past the last one were appended, or recomputed.
    fail(
      'forged',
      { index: expected - 1, seq: null },
      `entries #${lastMac + 1} to #${expected - 1} end the chain without the vault's MAC: appended, or changed with their hashes recomputed`,
    );
  }
  await checkUnsealed(store, head, options, page, result, fail);
  return result;
}

/** The boundary of the unverified prefix as the head has it, against the one a sealed entry records. */
function checkBoundary(
  head: AuditChainHead,
  recorded: number,
  where: string,
  fail: (kind: AuditBreak['kind'], entry: { index: number | null; seq: number | null }, message: string) => void,
): void {
  if (recorded === head.legacyThrough) return;
  fail(
    'head',
    { index: head.index, seq: null },
    `the chain head marks entries up to seq ${head.legacyThrough} as older than the chain, but ${where} records seq ${recorded}: the boundary was changed`,
  );
}

function checkHead(
  head: AuditChainHead,
  last: number,
  lastHash: Buffer,
  fail: (kind: AuditBreak['kind'], entry: { index: number | null; seq: number | null }, message: string) => void,
): void {
  if (head.index > last) {
    fail(
      'removed',
      { index: last + 1, seq: null },
      last + 1 === head.index ? `entry #${head.index} (the last) was removed` : `entries #${last + 1} to #${head.index} (the end of the chain) were removed`,
    );
  } else if (head.index < last || (last > 0 && (head.hash === null || !head.hash.equals(lastHash)))) {
    fail('head', { index: head.index, seq: null }, `the chain head (#${head.index}) does not match its last entry (#${last}): the head was changed`);
  }
}

async function checkUnsealed(
  store: Store,
  head: AuditChainHead,
  options: VerifyAuditOptions,
  page: number,
  result: TenantAuditVerification,
  fail: (kind: AuditBreak['kind'], entry: { index: number | null; seq: number | null }, message: string) => void,
): Promise<void> {
  const grace = options.pendingGraceMs ?? 60_000;
  let after = 0;
  for (;;) {
    const rows = await store.readUnsealedAudit(result.tenantId, after, page);
    for (const row of rows) {
      after = row.seq;
      if (row.seq <= head.legacyThrough) result.unverifiedPrefix++;
      else if (row.at > options.now - grace) result.pendingSeal++;
      else fail('unsealed', { index: null, seq: row.seq }, `entry seq ${row.seq} was never sealed: inserted, or written by a vault that stopped before sealing it`);
    }
    if (rows.length < page) return;
  }
}

/** The checkpoint that cut furthest (retention's latest). */
async function latestCheckpoint(store: Store, tenantId: string, page: number): Promise<CheckpointDetail | null> {
  let best: CheckpointDetail | null = null;
  let after = 0;
  for (;;) {
    const rows: ChainedAuditEntry[] = await store.readAuditChain(tenantId, after, page);
    for (const row of rows) {
      after = row.seal!.index;
      const detail = parseCheckpoint(row);
      if (detail !== null && (best === null || detail.through > best.through)) best = detail;
    }
    if (rows.length < page) return best;
  }
}
