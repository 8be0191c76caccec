import type { ColumnChange } from '../record-changes.js';
import { SqlParams } from './paging.js';
import type { Queryable } from './pg-executor.js';
import type { StatementShape } from './statement-names.js';

/**
 * One UPDATE … RETURNING of `columns` on the tenant's row `id` in schema `s`, under `condition` (a
 * precondition whose values follow the columns'); returns [text, values, 'shaped'] (the caller's
 * changed fields choose the columns: statement-names.ts).
 */
export function updateSql(
  s: string,
  table: 'applications' | 'formulas' | 'reactors',
  returning: string,
  tenantId: string,
  id: string,
  columns: readonly ColumnChange[],
  condition: readonly { sql: (placeholder: string) => string; value: unknown }[],
): [string, unknown[], StatementShape] {
  const values: unknown[] = [];
  const bind = (value: unknown) => `$${values.push(value)}`;
  const set = columns.map((c) => `${c.column} = ${bind(c.value)}${c.json ? '::json' : ''}`).join(', ');
  const where = [`t.tenant_id = ${bind(tenantId)}`, `t.id = ${bind(id)}`, ...condition.map((c) => c.sql(bind(c.value)))];
  return [`UPDATE ${s}.${table} AS t SET ${set} WHERE ${where.join(' AND ')} RETURNING ${returning}`, values, 'shaped'];
}

/** `changed` or `not_found` after an update that matched no row under a precondition. */
export async function missedUpdate(
  db: Queryable,
  s: string,
  table: 'applications' | 'formulas' | 'reactors',
  tenantId: string,
  id: string,
): Promise<{ status: 'changed' } | { status: 'not_found' }> {
  const { rows } = await db.query(`SELECT 1 FROM ${s}.${table} WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rows.length === 0 ? { status: 'not_found' } : { status: 'changed' };
}

/** The list query of a tenant's rows of `table` (paging.ts adds order and page). */
export function tenantList(s: string, columns: string, table: string, tenantId: string) {
  const params = new SqlParams();
  return { columns, from: `FROM ${s}.${table} t`, where: [`t.tenant_id = ${params.add(tenantId, 'text')}`], params };
}
