import type { AuditEntry, AuditSealer } from '../store.js';
import { SqliteAuditChain } from './sqlite-audit-chain.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import type { StatementCache } from './statement-cache.js';
import { WalSync } from './wal-sync.js';

/** The audit log's writes on SQLite (store-parts.ts, area `audit`); its reads are written once (areas/audit.ts). */
export class SqliteAuditWrites {
  readonly #appendTx: SqliteTransaction<(entries: readonly AuditEntry[], sealer: AuditSealer | undefined) => void>;
  readonly #pruneTx: SqliteTransaction<(tenantId: string, before: number, sealer: AuditSealer) => number>;
  readonly #walSync: WalSync;

  constructor(db: BetterSqlite3Database, statements: StatementCache) {
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
}
