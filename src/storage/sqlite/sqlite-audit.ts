import type { AuditEntry, AuditFilter, PageRequest, PageResult, StoredAuditEntry } from '../store.js';
import { insertAuditBatch } from './audit-sql.js';
import { runPage } from './paging.js';
import { AUDIT_COLUMNS, toAudit } from './record-rows.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import type { StatementCache } from './statement-cache.js';
import { WalSync } from './wal-sync.js';

/** The audit log: a part of the SQLite store (store-parts.ts, area `audit`). */
export class SqliteAudit {
  readonly #statements: StatementCache;
  readonly #read: <R>(fn: () => R) => R;
  readonly #appendTx: SqliteTransaction<(entries: readonly AuditEntry[]) => void>;
  readonly #walSync: WalSync;

  constructor(db: BetterSqlite3Database, statements: StatementCache, read: <R>(fn: () => R) => R) {
    this.#statements = statements;
    this.#read = read;
    this.#appendTx = db.transaction((entries: readonly AuditEntry[]) => insertAuditBatch(statements, entries));
    this.#walSync = new WalSync(db, statements);
  }

  /**
   * One transaction for the batch; resolves once it is on disk. Its fsync runs off the event loop's
   * thread (wal-sync.ts): the audit log flushes a batch every 50 ms under load.
   */
  appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return this.#walSync.commit(() => this.#appendTx.immediate(entries));
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
    return runPage(this.#statements, this.#read, { columns: AUDIT_COLUMNS, from: `FROM audit_log t WHERE ${where.join(' AND ')}`, params }, page, toAudit);
  }
}
