import type { AuditEntry, AuditFilter, PageRequest, PageResult, StoredAuditEntry } from '../store.js';
import { runPage } from './paging.js';
import type { PgExecutor } from './pg-executor.js';
import { tenantList } from './pg-record-update.js';
import { AUDIT_COLUMNS, toAudit } from './record-rows.js';
import type { RecordStatements } from './record-sql.js';

/** The audit log: a part of the PostgreSQL store (store-parts.ts). */
export class PostgresAudit {
  readonly #db: PgExecutor;
  readonly #s: string;
  readonly #sql: RecordStatements;

  constructor(db: PgExecutor, s: string, sql: RecordStatements) {
    this.#db = db;
    this.#s = s;
    this.#sql = sql;
  }

  /** One statement for the whole batch, whatever its size (the entries bind as seven arrays). */
  async appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.#db.query(this.#sql.appendAudit, [
      entries.map((e) => e.tenantId),
      entries.map((e) => e.actor),
      entries.map((e) => e.operation),
      entries.map((e) => e.resourceId ?? null),
      entries.map((e) => e.outcome),
      entries.map((e) => e.detail ?? null),
      entries.map((e) => e.at),
    ]);
  }

  /**
   * Oldest first (ascending seq), through the (tenant_id, seq) index. Entries are numbered when
   * inserted, not when committed, so an entry committed late by a concurrent writer may carry a
   * seq below a cursor already handed out; a reader paging at that moment does not see it.
   */
  listAudit(tenantId: string, filter: AuditFilter, page: PageRequest): Promise<PageResult<StoredAuditEntry>> {
    const query = tenantList(this.#s, AUDIT_COLUMNS, 'audit_log', tenantId);
    if (filter?.resourceId !== undefined) query.where.push(`t.resource_id = ${query.params.add(filter.resourceId, 'text')}`);
    if (filter?.actor !== undefined) query.where.push(`t.actor = ${query.params.add(filter.actor, 'text')}`);
    if (filter?.operation !== undefined) query.where.push(`t.operation = ${query.params.add(filter.operation, 'text')}`);
    return runPage(this.#db, query, page, toAudit);
  }
}
