import type { AuditEntry, AuditSealer } from '../store.js';
import { type AuditChainStatements, sealInto } from './postgres-audit-chain.js';
import type { PgExecutor } from './pg-executor.js';

/**
 * The audit log's append on PostgreSQL (store-parts.ts, area `audit`); the rest of the area is
 * written once (areas/audit.ts).
 */
export class PostgresAuditAppend {
  readonly #db: PgExecutor;
  readonly #chain: AuditChainStatements;

  constructor(db: PgExecutor, chain: AuditChainStatements) {
    this.#db = db;
    this.#chain = chain;
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
}
