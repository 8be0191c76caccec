import type { AuditEntry, AuditSealer } from '../store.js';
import { type AuditChainStatements, auditChainStatements, pruneInto, sealInto } from './postgres-audit-chain.js';
import type { PgExecutor } from './pg-executor.js';

/** The audit log's writes on PostgreSQL (store-parts.ts, area `audit`); its reads are written once (areas/audit.ts). */
export class PostgresAuditWrites {
  readonly #db: PgExecutor;
  readonly #chain: AuditChainStatements;

  constructor(db: PgExecutor, s: string) {
    this.#db = db;
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
    await this.#db.query(this.#chain.appendUnsealed, [
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
}
