import type { AuditChainHead, AuditEntry, AuditFilter, AuditSealer, ChainedAuditEntry, PageRequest, PageResult, StoredAuditEntry } from '../store.js';
import { AUDIT_ENTRY_COLUMNS, toAuditHead, toChainedAudit, toStoredAudit } from '../areas/audit-rows.js';
import { type AuditChainStatements, auditChainStatements, pruneInto, sealInto } from './postgres-audit-chain.js';
import { runPage } from './paging.js';
import type { PgExecutor } from './pg-executor.js';
import { tenantList } from './pg-record-update.js';
import type { RecordStatements } from './record-sql.js';

/** The audit log: a part of the PostgreSQL store (store-parts.ts). */
export class PostgresAudit {
  readonly #db: PgExecutor;
  readonly #s: string;
  readonly #sql: RecordStatements;
  readonly #chain: AuditChainStatements;

  constructor(db: PgExecutor, s: string, sql: RecordStatements) {
    this.#db = db;
    this.#s = s;
    this.#sql = sql;
    this.#chain = auditChainStatements(s);
  }

  /**
   * With a sealer: one transaction for the batch, a fixed handful of statements whatever its size
   * (postgres-audit-chain.ts). Without: one statement (the entries bind as seven arrays), unsealed.
   */
  async appendAudit(entries: readonly AuditEntry[], sealer?: AuditSealer): Promise<void> {
    if (sealer !== undefined) {
      if (entries.length === 0 && sealer.tenants.length === 0) return;
      await this.#db.transaction((tx) => sealInto(tx, this.#chain, entries, sealer));
      return;
    }
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

  pruneAudit(tenantId: string, before: number, sealer: AuditSealer): Promise<number> {
    return this.#db.transaction((tx) => pruneInto(tx, this.#chain, tenantId, before, sealer));
  }

  async auditHead(tenantId: string): Promise<AuditChainHead | null> {
    const row = (await this.#db.query(this.#chain.head, [tenantId])).rows[0];
    return row === undefined ? null : toAuditHead(row);
  }

  async auditTenants(): Promise<string[]> {
    return (await this.#db.query(this.#chain.tenants)).rows.map((r) => r['tenant_id'] as string);
  }

  async readAuditChain(tenantId: string, afterIndex: number, limit: number): Promise<ChainedAuditEntry[]> {
    return (await this.#db.query(this.#chain.chain, [tenantId, afterIndex, limit])).rows.map(toChainedAudit);
  }

  async readUnsealedAudit(tenantId: string, afterSeq: number, limit: number): Promise<StoredAuditEntry[]> {
    return (await this.#db.query(this.#chain.unsealed, [tenantId, afterSeq, limit])).rows.map(toStoredAudit);
  }

  async readAuditSince(since: number, afterSeq: number, limit: number): Promise<ChainedAuditEntry[]> {
    return (await this.#db.query(this.#chain.since, [afterSeq, since, limit])).rows.map(toChainedAudit);
  }

  /**
   * Oldest first (ascending seq), through the (tenant_id, seq) index. Entries are numbered when
   * inserted, not when committed, so an entry committed late by a concurrent writer may carry a
   * seq below a cursor already handed out; a reader paging at that moment does not see it.
   */
  listAudit(tenantId: string, filter: AuditFilter, page: PageRequest): Promise<PageResult<StoredAuditEntry>> {
    const query = tenantList(this.#s, AUDIT_ENTRY_COLUMNS, 'audit_log', tenantId);
    if (filter?.resourceId !== undefined) query.where.push(`t.resource_id = ${query.params.add(filter.resourceId, 'text')}`);
    if (filter?.actor !== undefined) query.where.push(`t.actor = ${query.params.add(filter.actor, 'text')}`);
    if (filter?.operation !== undefined) query.where.push(`t.operation = ${query.params.add(filter.operation, 'text')}`);
    return runPage(this.#db, query, page, toStoredAudit);
  }
}
