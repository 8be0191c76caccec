import type { AuditChainHead, AuditEntry, ChainedAuditEntry, StoredAuditEntry } from '../store.js';
import type { Row } from '../sql/operation.js';

// Audit rows as both stores read them (better-sqlite3 and pg name the columns alike; BLOB and
// bytea both come back as Buffer), and the one shape of a stored entry.

/** An entry's columns, in the order of StoredAuditEntry's fields. */
export const AUDIT_ENTRY_COLUMNS = 'seq, tenant_id, actor, operation, resource_id, outcome, detail, at';
/** An entry's columns and its seal's. */
export const CHAINED_AUDIT_COLUMNS = `${AUDIT_ENTRY_COLUMNS}, chain_index, chain_hash, chain_mac`;

/**
 * An entry given the seq it is stored under. Every stored entry is built in this one field order,
 * here and by toStoredAudit, so the sealer's and the inserts' loops over a batch see objects of one
 * shape: a spread (`{ ...entry, seq }`) made a second shape, and those loops, run for every audited
 * read, several times slower per entry (docs/performance.md, the audit chain's cost).
 */
export const storedEntry = (entry: AuditEntry, seq: number): StoredAuditEntry => ({
  seq,
  tenantId: entry.tenantId,
  actor: entry.actor,
  operation: entry.operation,
  resourceId: entry.resourceId,
  outcome: entry.outcome,
  detail: entry.detail,
  at: entry.at,
});

export const toStoredAudit = (row: Row): StoredAuditEntry => ({
  seq: row['seq'] as number,
  tenantId: row['tenant_id'] as string,
  actor: row['actor'] as string,
  operation: row['operation'] as string,
  resourceId: row['resource_id'] as string | null,
  outcome: row['outcome'] as 'success' | 'failure',
  detail: row['detail'] as string | null,
  at: row['at'] as number,
});

/**
 * A row with a chain position is sealed. One whose hash was erased by hand keeps its position and
 * reads back with an empty hash, which no entry's hash equals, so verification names it as
 * changed (test/audit/audit-chain.test.ts) instead of stopping on a seal it cannot read.
 */
export const toChainedAudit = (row: Row): ChainedAuditEntry => {
  const index = row['chain_index'] as number | null;
  const hash = (row['chain_hash'] as Buffer | null) ?? EMPTY;
  return { ...toStoredAudit(row), seal: index == null ? null : { index, hash, mac: (row['chain_mac'] as Buffer | null) ?? null } };
};

const EMPTY = Buffer.alloc(0);

/** A chain head's columns (audit_heads), as toAuditHead reads them. */
export const AUDIT_HEAD_COLUMNS = 'tenant_id, chain_index, chain_hash, legacy_through';

export const toAuditHead = (row: Row): AuditChainHead => ({
  tenantId: row['tenant_id'] as string,
  index: row['chain_index'] as number,
  hash: row['chain_hash'] as Buffer | null,
  legacyThrough: row['legacy_through'] as number,
});
