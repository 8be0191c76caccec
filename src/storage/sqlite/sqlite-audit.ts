import type { AuditEntry, AuditSealer } from '../store.js';
import type { SqliteAuditChain } from './sqlite-audit-chain.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import type { StatementCache } from './statement-cache.js';
import { WalSync } from './wal-sync.js';

/**
 * The audit log's append on SQLite (store-parts.ts, area `audit`); the rest of the area is written
 * once (areas/audit.ts).
 */
export class SqliteAuditAppend {
  readonly #appendTx: SqliteTransaction<(entries: readonly AuditEntry[], sealer: AuditSealer | undefined) => void>;
  readonly #walSync: WalSync;

  constructor(db: BetterSqlite3Database, statements: StatementCache, chain: SqliteAuditChain) {
    this.#appendTx = db.transaction((entries: readonly AuditEntry[], sealer: AuditSealer | undefined) => chain.append(entries, sealer));
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
}
