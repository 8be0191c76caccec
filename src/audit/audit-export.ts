import { formatIso } from '../common/time.js';
import type { ChainedAuditEntry, Store } from '../storage/store.js';

/** One exported line (docs/audit.md): the entry as the logs API shows it, with its place in the chain. */
export interface ExportedAuditEntry {
  seq: number;
  tenant_id: string;
  actor: string;
  operation: string;
  resource_id: string | null;
  outcome: 'success' | 'failure';
  detail: string | null;
  at: string;
  /** Position in the tenant's chain and hash (hex); null for an entry older than the chain or not sealed yet. The MAC is on the last entry of each sealed batch. */
  chain_index: number | null;
  chain_hash: string | null;
  chain_mac: string | null;
}

export function exportedEntry(entry: ChainedAuditEntry): ExportedAuditEntry {
  return {
    seq: entry.seq,
    tenant_id: entry.tenantId,
    actor: entry.actor,
    operation: entry.operation,
    resource_id: entry.resourceId,
    outcome: entry.outcome,
    detail: entry.detail,
    at: formatIso(entry.at),
    chain_index: entry.seal?.index ?? null,
    chain_hash: entry.seal?.hash.toString('hex') ?? null,
    chain_mac: entry.seal?.mac?.toString('hex') ?? null,
  };
}

/**
 * Writes every entry (all tenants) with `at` at or after `since` as JSON lines, in seq order, page
 * by page; answers how many. Entries hold ids, operations and error codes, never token data.
 */
export async function exportAudit(store: Store, since: number, write: (line: string) => void | Promise<void>, pageSize = 1000): Promise<number> {
  let after = 0;
  let count = 0;
  for (;;) {
    const rows = await store.readAuditSince(since, after, pageSize);
    for (const row of rows) {
      await write(`${JSON.stringify(exportedEntry(row))}\n`);
      after = row.seq;
      count++;
    }
    if (rows.length < pageSize) return count;
  }
}
