import type { AuditFilter } from '../store.js';
import type { AreaMethod } from '../store-parts.js';
import { listStatements, listStatementsByName, pageSteps, type ListStatements } from '../sql/list-page.js';
import { operation, query, type AreaOperations } from '../sql/operation.js';
import { raw, sql, table } from '../sql/sql.js';
import { AUDIT_ENTRY_COLUMNS, AUDIT_HEAD_COLUMNS, CHAINED_AUDIT_COLUMNS, toAuditHead, toChainedAudit, toStoredAudit } from './audit-rows.js';

// The audit log's reads, written once. Its writes (appendAudit, pruneAudit) seal entries into each
// tenant's chain and stay each store's own: SQLite writes a batch under its one writer and syncs
// off the event loop's thread, PostgreSQL binds a batch as arrays and locks the chain heads it
// moves (sqlite/sqlite-audit-chain.ts, postgres/postgres-audit-chain.ts).

const LOG = table('audit_log');
const CHAINED = raw(CHAINED_AUDIT_COLUMNS);

/** The filters of listAudit in the order their conditions follow the tenant's (argument 2 on). */
const FILTERS = ['resourceId', 'actor', 'operation'] as const satisfies readonly (keyof AuditFilter)[];
const FILTER_COLUMNS: Record<(typeof FILTERS)[number], string> = { resourceId: 'resource_id', actor: 'actor', operation: 'operation' };

/**
 * One list per combination of filters (bit i set: FILTERS[i] given), so each is a fixed statement
 * that the driver prepares once. No index covers the filtered columns (every token write appends
 * to the log, and each index would cost every write): a listing walks the tenant's entries in seq
 * order (PostgreSQL through its (tenant_id, seq) index, SQLite along the table), and a filter that
 * matches rarely reads far.
 */
const LISTS: readonly ListStatements[] = Array.from({ length: 1 << FILTERS.length }, (_, mask) => {
  const given = FILTERS.filter((_, i) => (mask & (1 << i)) !== 0);
  const from = sql(['FROM ', ' t WHERE t.tenant_id = ', ...given.map((name) => ` AND t.${FILTER_COLUMNS[name]} = `), ''], LOG, 1, ...given.map((_, i) => i + 2));
  return listStatements(raw(AUDIT_ENTRY_COLUMNS), from, given.length + 1);
});

export const AUDIT_SQL = {
  head: sql`SELECT ${raw(AUDIT_HEAD_COLUMNS)} FROM ${table('audit_heads')} WHERE tenant_id = ${1}`,
  tenants: sql`SELECT tenant_id FROM ${table('audit_heads')} UNION SELECT DISTINCT tenant_id FROM ${LOG} ORDER BY 1`,
  chain: sql`SELECT ${CHAINED} FROM ${LOG} WHERE tenant_id = ${1} AND chain_index > ${2} ORDER BY chain_index LIMIT ${3}`,
  unsealed: sql`SELECT ${CHAINED} FROM ${LOG} WHERE tenant_id = ${1} AND chain_index IS NULL AND seq > ${2} ORDER BY seq LIMIT ${3}`,
  since: sql`SELECT ${CHAINED} FROM ${LOG} WHERE seq > ${1} AND at >= ${2} ORDER BY seq LIMIT ${3}`,
  ...listStatementsByName(Object.fromEntries(LISTS.map((list, mask) => [`list${mask}`, list]))),
};

/** The audit area's methods that each store writes itself (see above). */
export const AUDIT_WRITES = ['appendAudit', 'pruneAudit'] as const satisfies readonly AreaMethod<'audit'>[];
export type AuditRead = Exclude<AreaMethod<'audit'>, (typeof AUDIT_WRITES)[number]>;

/** The audit log's reads (store-parts.ts, area `audit`); every one is a single statement. */
export const AUDIT_READS: Pick<AreaOperations<'audit'>, AuditRead> = {
  auditHead: operation('statement', function* (_d, tenantId) {
    const row = (yield query(AUDIT_SQL.head, tenantId)).rows[0];
    return row === undefined ? null : toAuditHead(row);
  }),

  auditTenants: operation('statement', function* () {
    return (yield query(AUDIT_SQL.tenants)).rows.map((row) => row['tenant_id'] as string);
  }),

  readAuditChain: operation('statement', function* (_d, tenantId, afterIndex, limit) {
    return (yield query(AUDIT_SQL.chain, tenantId, afterIndex, limit)).rows.map(toChainedAudit);
  }),

  readUnsealedAudit: operation('statement', function* (_d, tenantId, afterSeq, limit) {
    return (yield query(AUDIT_SQL.unsealed, tenantId, afterSeq, limit)).rows.map(toStoredAudit);
  }),

  readAuditSince: operation('statement', function* (_d, since, afterSeq, limit) {
    return (yield query(AUDIT_SQL.since, afterSeq, since, limit)).rows.map(toChainedAudit);
  }),

  /**
   * Oldest first (ascending seq), so a cursor walks the log in the order it was written and a page
   * never shifts under entries appended meanwhile. On PostgreSQL entries are numbered when
   * inserted, not when committed, so an entry committed late by a concurrent writer may carry a
   * seq below a cursor already handed out; a reader paging at that moment does not see it.
   */
  listAudit: operation('statement', function* (_d, tenantId, filter, page) {
    let mask = 0;
    const args: unknown[] = [tenantId];
    FILTERS.forEach((name, i) => {
      const value = filter?.[name];
      if (value === undefined) return;
      mask |= 1 << i;
      args.push(value);
    });
    return yield* pageSteps(LISTS[mask]!, args, page, toStoredAudit);
  }),
};
