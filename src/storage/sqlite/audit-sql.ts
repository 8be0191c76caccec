import type { AuditEntry } from '../store.js';
import type { StatementCache } from './statement-cache.js';

const COLUMNS = 'INSERT INTO audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at) VALUES ';
const ROW = '(?, ?, ?, ?, ?, ?, ?)';
const INSERT_AUDIT = COLUMNS + ROW;
/** Rows per statement when appending a batch (one statement per 32 rows costs far less than 32). */
const BATCH_ROWS = 32;
const INSERT_AUDIT_BATCH = COLUMNS + Array.from({ length: BATCH_ROWS }, () => ROW).join(', ');

/** Appends one audit entry (inside the caller's transaction, when there is one). */
export function insertAudit(statements: StatementCache, entry: AuditEntry): void {
  statements.get(INSERT_AUDIT).run(entry.tenantId, entry.actor, entry.operation, entry.resourceId ?? null, entry.outcome, entry.detail ?? null, entry.at);
}

/** Appends many entries: full chunks of BATCH_ROWS through one multi-row statement, the rest one by one. */
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
