import type { ColumnChange } from '../record-changes.js';
import type { RecordUpdateResult } from '../store.js';
import type { StatementCache } from './statement-cache.js';

/** A transaction that runs the function it is given: record updates run in one BEGIN IMMEDIATE. */
export interface WriteTransaction {
  immediate<T>(write: () => T): T;
}

/**
 * UPDATE of `columns` where the row is the tenant's `id` and `condition` (a precondition) holds,
 * then the row as stored. Runs inside a transaction (the caller's), so the read is the write's.
 */
export function updateRecord<T>(
  statements: StatementCache,
  table: 'applications' | 'formulas' | 'reactors',
  tenantId: string,
  id: string,
  columns: readonly ColumnChange[],
  condition: string,
  conditionParams: readonly unknown[],
  read: () => T | null,
): RecordUpdateResult<T> {
  const sql = `UPDATE ${table} SET ${columns.map((c) => `${c.column} = ?`).join(', ')} WHERE tenant_id = ? AND id = ?${condition}`;
  const changed = statements.get(sql).run(...columns.map((c) => c.value), tenantId, id, ...conditionParams).changes === 1;
  const record = read();
  if (record === null) return { status: 'not_found' };
  return changed ? { status: 'updated', record } : { status: 'changed' };
}
