import type { AuditChainHead, AuditEntry, AuditFilter, AuditSealer, ChainedAuditEntry, PageRequest, PageResult, StoredAuditEntry } from '../store.js';
import { AUDIT_ENTRY_COLUMNS, CHAINED_AUDIT_COLUMNS, toAuditHead, toChainedAudit, toStoredAudit } from '../areas/audit-rows.js';
import type { Row } from '../sql/operation.js';
import { HEAD, SqliteAuditChain } from './sqlite-audit-chain.js';
import { runPage } from './paging.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import type { StatementCache } from './statement-cache.js';
import { WalSync } from './wal-sync.js';

/** The audit log: a part of the SQLite store (store-parts.ts, area `audit`). */
export class SqliteAudit {
  readonly #statements: StatementCache;
  readonly #read: <R>(fn: () => R) => R;
  readonly #appendTx: SqliteTransaction<(entries: readonly AuditEntry[], sealer: AuditSealer | undefined) => void>;
  readonly #pruneTx: SqliteTransaction<(tenantId: string, before: number, sealer: AuditSealer) => number>;
  readonly #walSync: WalSync;

  constructor(db: BetterSqlite3Database, statements: StatementCache, read: <R>(fn: () => R) => R) {
    this.#statements = statements;
    this.#read = read;
    const chain = new SqliteAuditChain(statements);
    this.#appendTx = db.transaction((entries: readonly AuditEntry[], sealer: AuditSealer | undefined) => chain.append(entries, sealer));
    this.#pruneTx = db.transaction((tenantId: string, before: number, sealer: AuditSealer) => chain.prune(tenantId, before, sealer));
    this.#walSync = new WalSync(db, statements);
  }

  /**
   * One transaction for the batch; resolves once it is on disk. Its fsync runs off the event loop's
   * thread (wal-sync.ts): the audit log flushes a batch every 50 ms under load.
   */
  appendAudit(entries: readonly AuditEntry[], sealer?: AuditSealer): Promise<void> {
    if (entries.length === 0 && (sealer === undefined || sealer.tenants.length === 0)) return Promise.resolve();
    return this.#walSync.commit(() => this.#appendTx.immediate(entries, sealer));
  }

  pruneAudit(tenantId: string, before: number, sealer: AuditSealer): number {
    return this.#pruneTx.immediate(tenantId, before, sealer);
  }

  auditHead(tenantId: string): AuditChainHead | null {
    const row = this.#read(() => this.#statements.get(HEAD).get(tenantId));
    return row === undefined ? null : toAuditHead(row as Row);
  }

  auditTenants(): string[] {
    const sql = 'SELECT tenant_id FROM audit_heads UNION SELECT DISTINCT tenant_id FROM audit_log ORDER BY 1';
    return this.#read(() => (this.#statements.get(sql).all() as { tenant_id: string }[]).map((r) => r.tenant_id));
  }

  readAuditChain(tenantId: string, afterIndex: number, limit: number): ChainedAuditEntry[] {
    const sql = `SELECT ${CHAINED_AUDIT_COLUMNS} FROM audit_log WHERE tenant_id = ? AND chain_index > ? ORDER BY chain_index LIMIT ?`;
    return this.#read(() => (this.#statements.get(sql).all(tenantId, afterIndex, limit) as Row[]).map(toChainedAudit));
  }

  readUnsealedAudit(tenantId: string, afterSeq: number, limit: number): StoredAuditEntry[] {
    const sql = `SELECT ${CHAINED_AUDIT_COLUMNS} FROM audit_log WHERE tenant_id = ? AND chain_index IS NULL AND seq > ? ORDER BY seq LIMIT ?`;
    return this.#read(() => (this.#statements.get(sql).all(tenantId, afterSeq, limit) as Row[]).map(toStoredAudit));
  }

  readAuditSince(since: number, afterSeq: number, limit: number): ChainedAuditEntry[] {
    const sql = `SELECT ${CHAINED_AUDIT_COLUMNS} FROM audit_log WHERE seq > ? AND at >= ? ORDER BY seq LIMIT ?`;
    return this.#read(() => (this.#statements.get(sql).all(afterSeq, since, limit) as Row[]).map(toChainedAudit));
  }

  /**
   * Oldest first (ascending seq), so a cursor walks the log in the order it was written and a page
   * never shifts under entries appended meanwhile. The log has no secondary index (every token
   * write appends to it, and each index would cost every write), so a listing walks it in seq order
   * and a filter that matches rarely reads far.
   */
  listAudit(tenantId: string, filter: AuditFilter, page: PageRequest): PageResult<StoredAuditEntry> {
    const where = ['t.tenant_id = ?'];
    const params: unknown[] = [tenantId];
    if (filter?.resourceId !== undefined) {
      where.push('t.resource_id = ?');
      params.push(filter.resourceId);
    }
    if (filter?.actor !== undefined) {
      where.push('t.actor = ?');
      params.push(filter.actor);
    }
    if (filter?.operation !== undefined) {
      where.push('t.operation = ?');
      params.push(filter.operation);
    }
    return runPage(this.#statements, this.#read, { columns: AUDIT_ENTRY_COLUMNS, from: `FROM audit_log t WHERE ${where.join(' AND ')}`, params }, page, toStoredAudit);
  }
}
