import { needsChainStart } from '../audit-chain-store.js';
import { AUDIT_SQL } from '../areas/audit.js';
import { AUDIT_ENTRY_COLUMNS, storedEntry, toAuditHead, toStoredAudit } from '../areas/audit-rows.js';
import { sqliteDialect } from '../sql/dialect.js';
import type { Row } from '../sql/operation.js';
import type { AuditChainHead, AuditEntry, AuditSealer, StoredAuditEntry } from '../store.js';
import { insertAuditBatch, insertSealedBatch } from './audit-sql.js';
import type { StatementCache } from './statement-cache.js';

/** A tenant's chain head: the text of the audit area's read (areas/audit.ts). */
const HEAD = AUDIT_SQL.head.render(sqliteDialect).text;
const NEW_HEAD = 'INSERT INTO audit_heads (tenant_id, chain_index, chain_hash, legacy_through) VALUES (?, 0, NULL, 0) ON CONFLICT DO NOTHING';
const SET_HEAD = 'UPDATE audit_heads SET chain_index = ?, chain_hash = ? WHERE tenant_id = ?';
const PENDING = `SELECT ${AUDIT_ENTRY_COLUMNS} FROM audit_log WHERE tenant_id = ? AND chain_index IS NULL AND seq > ? ORDER BY seq`;
const SEAL = 'UPDATE audit_log SET chain_index = ?, chain_hash = ?, chain_mac = ? WHERE seq = ?';
const LAST_SEQ = 'SELECT coalesce(max(seq), 0) AS seq FROM audit_log';

/**
 * The SQLite side of the chain's writes; every function runs inside the caller's BEGIN IMMEDIATE
 * transaction, so the database's one writer is the chain's one writer. Seqs of new entries are
 * chosen here (the last seq plus one) so that their hashes can cover them. Retention's cut is
 * written once (areas/audit.ts) and seals through `seal`.
 */
export class SqliteAuditChain {
  readonly #statements: StatementCache;

  constructor(statements: StatementCache) {
    this.#statements = statements;
  }

  head(tenantId: string): AuditChainHead {
    const s = this.#statements;
    s.get(NEW_HEAD).run(tenantId);
    return toAuditHead(s.get(HEAD).get(tenantId) as Row);
  }

  /** Writes `entries`, sealed when a sealer is given (see seal), else unsealed. */
  append(entries: readonly AuditEntry[], sealer: AuditSealer | undefined): void {
    if (sealer === undefined) insertAuditBatch(this.#statements, entries);
    else this.seal(entries, sealer);
  }

  /** Seals every unsealed entry of the tenants involved, then `entries`, tenant by tenant; answers their heads after. */
  seal(entries: readonly AuditEntry[], sealer: AuditSealer): Map<string, AuditChainHead> {
    const byTenant = new Map<string, AuditEntry[]>();
    for (const tenantId of sealer.tenants) byTenant.set(tenantId, []);
    for (const entry of entries) {
      const list = byTenant.get(entry.tenantId);
      if (list === undefined) byTenant.set(entry.tenantId, [entry]);
      else list.push(entry);
    }
    const heads = new Map<string, AuditChainHead>();
    let seq = (this.#statements.get(LAST_SEQ).get() as { seq: number }).seq;
    for (const [tenantId, fresh] of byTenant) {
      const head = this.head(tenantId);
      const start = needsChainStart(head) ? storedEntry(sealer.start(head), ++seq) : null;
      const stored = fresh.map((e) => storedEntry(e, ++seq));
      heads.set(tenantId, this.#extend(head, stored, sealer, start));
    }
    return heads;
  }

  /**
   * Seals the tenant's chain-start entry (`start`, not stored yet: first, when the chain begins
   * now), its unsealed entries, then `fresh` (not stored yet), and moves the head.
   */
  #extend(head: AuditChainHead, fresh: readonly StoredAuditEntry[], sealer: AuditSealer, start: StoredAuditEntry | null): AuditChainHead {
    const s = this.#statements;
    const pending = (s.get(PENDING).all(head.tenantId, head.legacyThrough) as Row[]).map(toStoredAudit);
    if (start === null && pending.length === 0 && fresh.length === 0) return head;
    const lead = start === null ? 0 : 1;
    const seals = sealer.seal(head, start === null && pending.length === 0 ? fresh : [...(start === null ? [] : [start]), ...pending, ...fresh]);
    const seal = s.get(SEAL);
    for (let i = 0; i < pending.length; i++) seal.run(seals[lead + i]!.index, seals[lead + i]!.hash, seals[lead + i]!.mac, pending[i]!.seq);
    if (start !== null) insertSealedBatch(s, [start], seals.slice(0, 1));
    if (fresh.length > 0) insertSealedBatch(s, fresh, lead + pending.length === 0 ? seals : seals.slice(lead + pending.length));
    const last = seals.at(-1)!;
    s.get(SET_HEAD).run(last.index, last.hash, head.tenantId);
    return { ...head, index: last.index, hash: last.hash };
  }
}
