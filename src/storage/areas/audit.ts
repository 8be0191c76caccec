import type { AuditChainHead, AuditEntry, AuditFilter, AuditSealer } from '../store.js';
import type { AreaMethod } from '../store-parts.js';
import { listStatements, listStatementsByName, pageSteps, type ListStatements } from '../sql/list-page.js';
import { embedded, operation, query, type AreaOperations, type Steps } from '../sql/operation.js';
import { byDialect, raw, sql, table } from '../sql/sql.js';
import { AUDIT_ENTRY_COLUMNS, AUDIT_HEAD_COLUMNS, CHAINED_AUDIT_COLUMNS, toAuditHead, toChainedAudit, toStoredAudit } from './audit-rows.js';

// The audit log, written once but for its append. appendAudit stays each store's own: it is on the
// path of every audited request, and each store batches it its own way (SQLite writes a batch
// under its one writer and syncs it off the event loop's thread; PostgreSQL binds it as arrays
// and locks the chain heads it moves: sqlite/sqlite-audit-chain.ts, postgres/postgres-audit-chain.ts).
// Retention seals with that same chain writer, through the embedded call `sealAudit`.

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
  // Retention (pruneAudit): argument 1 is the tenant throughout.
  keepFrom: sql`SELECT min(chain_index) AS i FROM ${LOG} WHERE tenant_id = ${1} AND chain_index IS NOT NULL AND at >= ${2}`,
  hashAt: sql`SELECT chain_hash FROM ${LOG} WHERE tenant_id = ${1} AND chain_index = ${2}`,
  countCut: sql`SELECT count(*) AS n FROM ${LOG} WHERE tenant_id = ${1} AND chain_index <= ${2}`,
  countLegacy: sql`SELECT count(*) AS n FROM ${LOG} WHERE tenant_id = ${1} AND chain_index IS NULL AND seq <= ${2} AND at < ${3}`,
  cut: sql`DELETE FROM ${LOG} WHERE tenant_id = ${1} AND chain_index <= ${2}`,
  cutLegacy: sql`DELETE FROM ${LOG} WHERE tenant_id = ${1} AND chain_index IS NULL AND seq <= ${2} AND at < ${3}`,
  /**
   * The log's delete trigger refuses every deletion but retention's (the migrations say how): SQLite
   * lets a tenant's rows go while a permit row names it, PostgreSQL while a setting local to the
   * transaction is on, set here for the tenant whose head the prune holds locked.
   */
  permitCut: sql`${byDialect({
    sqlite: sql`INSERT INTO ${table('audit_prune_permits')} (tenant_id) VALUES (${1})`,
    postgres: sql`SELECT set_config('tokenvault.audit_prune', 'on', true) FROM ${table('audit_heads')} WHERE tenant_id = ${1}`,
  })}`,
  endPermit: sql`${byDialect({
    sqlite: sql`DELETE FROM ${table('audit_prune_permits')} WHERE tenant_id = ${1}`,
    postgres: sql`SELECT set_config('tokenvault.audit_prune', 'off', true) FROM ${table('audit_heads')} WHERE tenant_id = ${1}`,
  })}`,
  ...listStatementsByName(Object.fromEntries(LISTS.map((list, mask) => [`list${mask}`, list]))),
};

/** The audit area's methods that each store writes itself (see above). */
export const AUDIT_PER_STORE = ['appendAudit'] as const satisfies readonly AreaMethod<'audit'>[];
export type AuditShared = Exclude<AreaMethod<'audit'>, (typeof AUDIT_PER_STORE)[number]>;

/** The tenant's head after sealing `fresh` (none: its pending entries only) with its chain writer. */
function* sealTenant(tenantId: string, fresh: readonly AuditEntry[], sealer: AuditSealer): Steps<AuditChainHead> {
  const scoped: AuditSealer = { tenants: [tenantId], seal: (h, e) => sealer.seal(h, e), checkpoint: (h, c) => sealer.checkpoint(h, c), start: (h) => sealer.start(h) };
  return (yield* embedded('sealAudit', fresh, scoped)).get(tenantId)!;
}

const countOf = (rows: readonly Record<string, unknown>[]) => rows[0]!['n'] as number;

/** The audit log but its append (store-parts.ts, area `audit`). */
export const AUDIT_SHARED: Pick<AreaOperations<'audit'>, AuditShared> = {
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

  /**
   * One write transaction: the tenant's head locked and its pending entries sealed first, then
   * (when sealed entries go) the checkpoint sealed as the chain's next entry before the cut entries
   * leave: it links to the last of them and records its hash, and the first entry kept links to
   * that hash. Entries older than the chain were never part of it: they leave without a checkpoint.
   */
  pruneAudit: operation('write', function* (_d, tenantId, before, sealer) {
    let head = yield* sealTenant(tenantId, [], sealer);
    // The cut: every sealed entry before the first one at or after `before`, in chain order.
    const keep = (yield query(AUDIT_SQL.keepFrom, tenantId, before)).rows[0]?.['i'] as number | null | undefined;
    const through = keep == null ? head.index : keep - 1;
    const last = through > 0 ? ((yield query(AUDIT_SQL.hashAt, tenantId, through)).rows[0]?.['chain_hash'] as Buffer | undefined) : undefined;
    const sealedGone = last === undefined ? 0 : countOf((yield query(AUDIT_SQL.countCut, tenantId, through)).rows);
    const legacyGone = countOf((yield query(AUDIT_SQL.countLegacy, tenantId, head.legacyThrough, before)).rows);
    if (sealedGone === 0 && legacyGone === 0) return 0;
    yield query(AUDIT_SQL.permitCut, tenantId);
    if (sealedGone > 0) {
      head = yield* sealTenant(tenantId, [sealer.checkpoint(head, { through, hash: last!, removed: sealedGone })], sealer);
      yield query(AUDIT_SQL.cut, tenantId, through);
    }
    if (legacyGone > 0) yield query(AUDIT_SQL.cutLegacy, tenantId, head.legacyThrough, before);
    yield query(AUDIT_SQL.endPermit, tenantId);
    return sealedGone + legacyGone;
  }),
};
