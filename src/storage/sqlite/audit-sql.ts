import type { AuditEntry, AuditSeal, StoredAuditEntry } from '../store.js';
import type { StatementCache } from './statement-cache.js';

const COLUMNS = 'INSERT INTO audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at) VALUES ';
const ROW = '(?, ?, ?, ?, ?, ?, ?)';
const INSERT_AUDIT = COLUMNS + ROW;

/** Rows per statement when appending a batch (one statement per 32 rows costs far less than 32). */
const BATCH_ROWS = 32;
const INSERT_AUDIT_BATCH = COLUMNS + Array.from({ length: BATCH_ROWS }, () => ROW).join(', ');

const SEALED_COLUMNS = 'INSERT INTO audit_log (seq, tenant_id, actor, operation, resource_id, outcome, detail, at, chain_index, chain_hash, chain_mac) VALUES ';
const SEALED_ROW = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';
const SEALED_WIDTH = 11;
const INSERT_SEALED = SEALED_COLUMNS + SEALED_ROW;
const INSERT_SEALED_BATCH = SEALED_COLUMNS + Array.from({ length: BATCH_ROWS }, () => SEALED_ROW).join(', ');

/**
 * Appends one audit entry unsealed, inside the caller's transaction (a token update or deletion):
 * the next sealing writer of the tenant's chain seals it (sqlite-audit-chain.ts).
 */
export function insertAudit(statements: StatementCache, entry: AuditEntry): void {
  statements.get(INSERT_AUDIT).run(entry.tenantId, entry.actor, entry.operation, entry.resourceId ?? null, entry.outcome, entry.detail ?? null, entry.at);
}

/** Appends entries unsealed (no sealer given): full chunks of BATCH_ROWS through one multi-row statement, the rest one by one. */
export function insertAuditBatch(statements: StatementCache, entries: readonly AuditEntry[]): void {
  let i = 0;
  if (entries.length >= BATCH_ROWS) {
    const batch = statements.get(INSERT_AUDIT_BATCH);
    const params: unknown[] = new Array(BATCH_ROWS * 7);
    for (; i + BATCH_ROWS <= entries.length; i += BATCH_ROWS) {
      for (let j = 0; j < BATCH_ROWS; j++) {
        const e = entries[i + j]!;
        const o = j * 7;
        params[o] = e.tenantId;
        params[o + 1] = e.actor;
        params[o + 2] = e.operation;
        params[o + 3] = e.resourceId ?? null;
        params[o + 4] = e.outcome;
        params[o + 5] = e.detail ?? null;
        params[o + 6] = e.at;
      }
      batch.run(...params);
    }
  }
  for (; i < entries.length; i++) insertAudit(statements, entries[i]!);
}

function sealedParams(params: unknown[], o: number, e: StoredAuditEntry, seal: AuditSeal): void {
  params[o] = e.seq;
  params[o + 1] = e.tenantId;
  params[o + 2] = e.actor;
  params[o + 3] = e.operation;
  params[o + 4] = e.resourceId ?? null;
  params[o + 5] = e.outcome;
  params[o + 6] = e.detail ?? null;
  params[o + 7] = e.at;
  params[o + 8] = seal.index;
  params[o + 9] = seal.hash;
  params[o + 10] = seal.mac;
}

/** Appends sealed entries (their seq chosen by the caller): full chunks of BATCH_ROWS through one multi-row statement, the rest one by one. */
export function insertSealedBatch(statements: StatementCache, entries: readonly StoredAuditEntry[], seals: readonly AuditSeal[]): void {
  let i = 0;
  if (entries.length >= BATCH_ROWS) {
    const batch = statements.get(INSERT_SEALED_BATCH);
    const params: unknown[] = new Array(BATCH_ROWS * SEALED_WIDTH);
    for (; i + BATCH_ROWS <= entries.length; i += BATCH_ROWS) {
      for (let j = 0; j < BATCH_ROWS; j++) sealedParams(params, j * SEALED_WIDTH, entries[i + j]!, seals[i + j]!);
      batch.run(...params);
    }
  }
  const one = statements.get(INSERT_SEALED);
  const params: unknown[] = new Array(SEALED_WIDTH);
  for (; i < entries.length; i++) {
    sealedParams(params, 0, entries[i]!, seals[i]!);
    one.run(...params);
  }
}
