import type { AuditEntry, StoredAuditEntry } from './operations-store.js';

/**
 * The head of a tenant's audit chain (docs/audit.md): the last sealed entry's position and hash,
 * the boundary of the entries written before the chain existed, and where retention last cut it.
 */
export interface AuditChainHead {
  tenantId: string;
  /** Position of the last sealed entry (0: none yet). */
  index: number;
  /** Hash of the last sealed entry; null before the first. */
  hash: Buffer | null;
  /** Entries with a seq up to this one were written before the chain existed (its unverified prefix). */
  legacyThrough: number;
}

/**
 * What the chain adds to an entry: its position, its hash (linking the previous one), and on the
 * last entry of each sealed batch the MAC of that hash (null on the others).
 */
export interface AuditSeal {
  index: number;
  hash: Buffer;
  mac: Buffer | null;
}

/** An entry as the chain sees it: stored, with its seal once it has one (null: not sealed yet, or older than the chain). */
export interface ChainedAuditEntry extends StoredAuditEntry {
  seal: AuditSeal | null;
}

/** What retention removed, for the checkpoint entry that carries the chain forward. */
export interface AuditCut {
  /** The last chain position removed. */
  through: number;
  /** That entry's hash: the first entry kept links to it. */
  hash: Buffer;
  /** Entries removed (sealed ones and ones older than the chain). */
  removed: number;
}

/**
 * Seals entries into a tenant's chain. The store calls it inside the transaction that holds the
 * tenant's head locked (so one writer at a time extends a chain, whatever the instance), with the
 * entries in the order they join the chain; it returns their seals in that order. It holds the MAC
 * key, which the store never sees.
 */
export interface AuditSealer {
  /** Tenants whose unsealed entries (written inside token transactions) to seal along with the batch. */
  readonly tenants: readonly string[];
  seal(head: AuditChainHead, entries: readonly StoredAuditEntry[]): AuditSeal[];
  /** The checkpoint entry that records a cut (it is then sealed as the chain's next entry). */
  checkpoint(head: AuditChainHead, cut: AuditCut): AuditEntry;
  /**
   * The chain-start entry of a tenant whose entries older than the chain end at
   * `head.legacyThrough` (> 0): the store seals it as the chain's first entry, before anything
   * else, whenever it seals a tenant whose head is still at position 0 (the sweep seals every
   * tenant), so that boundary is vouched for by the vault's MAC (docs/audit.md).
   */
  start(head: AuditChainHead): AuditEntry;
}

/** Whether the tenant's next seal must begin with its chain-start entry (AuditSealer.start). */
export const needsChainStart = (head: AuditChainHead): boolean => head.index === 0 && head.legacyThrough > 0;

/** The chain operations of the audit log (both stores; docs/audit.md). */
export interface AuditChainStore {
  // appendAudit (OperationsStore) with a sealer locks each tenant's head, seals the tenant's
  // unsealed entries first, then writes the new ones sealed; without one it writes them unsealed
  // (the next sealing writer seals them).
  /** The tenant's chain head; null when its chain has not started. */
  auditHead(tenantId: string): Promise<AuditChainHead | null>;
  /** Tenants with audit entries or a chain head, in id order. */
  auditTenants(): Promise<string[]>;
  /** Sealed entries after chain position `afterIndex`, by position. */
  readAuditChain(tenantId: string, afterIndex: number, limit: number): Promise<ChainedAuditEntry[]>;
  /** Unsealed entries (the legacy prefix and any not sealed yet) after `afterSeq`, by seq. */
  readUnsealedAudit(tenantId: string, afterSeq: number, limit: number): Promise<StoredAuditEntry[]>;
  /** Entries of any tenant with `at` at or after `since`, after `afterSeq`, by seq (the export). */
  readAuditSince(since: number, afterSeq: number, limit: number): Promise<ChainedAuditEntry[]>;
  /**
   * Removes the tenant's sealed entries older than `before` (a prefix of its chain: the first entry
   * at or after `before` and everything after it stay) and its unsealed legacy entries older than
   * `before`, and appends the sealer's checkpoint, in one transaction with the head locked. Returns
   * how many entries it removed (0: nothing to remove, and no checkpoint).
   */
  pruneAudit(tenantId: string, before: number, sealer: AuditSealer): Promise<number>;
}
