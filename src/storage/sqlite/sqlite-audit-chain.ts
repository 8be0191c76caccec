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
 * chosen here (the last seq plus one) so that their hashes can cover them.
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

  /** Writes `entries` and seals every unsealed entry of the tenants involved, tenant by tenant. */
  append(entries: readonly AuditEntry[], sealer: AuditSealer | undefined): void {
    if (sealer === undefined) {
      insertAuditBatch(this.#statements, entries);
      return;
    }
    const byTenant = new Map<string, AuditEntry[]>();
    for (const tenantId of sealer.tenants) byTenant.set(tenantId, []);
    for (const entry of entries) {
      const list = byTenant.get(entry.tenantId);
      if (list === undefined) byTenant.set(entry.tenantId, [entry]);
      else list.push(entry);
    }
    let seq = (this.#statements.get(LAST_SEQ).get() as { seq: number }).seq;
    for (const [tenantId, fresh] of byTenant) {
      const head = this.head(tenantId);
      const start = needsChainStart(head) ? storedEntry(sealer.start(head), ++seq) : null;
      const stored = fresh.map((e) => storedEntry(e, ++seq));
      this.#extend(head, stored, sealer, start);
    }
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

  /** The head of a tenant for a seal outside append (retention), with its chain-start entry when its chain begins now. */
  #begin(tenantId: string, sealer: AuditSealer): AuditChainHead {
    const head = this.head(tenantId);
    const start = needsChainStart(head) ? storedEntry(sealer.start(head), (this.#statements.get(LAST_SEQ).get() as { seq: number }).seq + 1) : null;
    return this.#extend(head, [], sealer, start);
  }

  /** Retention (AuditChainStore.pruneAudit), inside the caller's transaction. */
  prune(tenantId: string, before: number, sealer: AuditSealer): number {
    const s = this.#statements;
    let head = this.#begin(tenantId, sealer);
    // The cut: every sealed entry before the first one at or after `before`, in chain order.
    const keep = s.get('SELECT min(chain_index) AS i FROM audit_log WHERE tenant_id = ? AND chain_index IS NOT NULL AND at >= ?').get(tenantId, before) as { i: number | null };
    const through = keep.i === null ? head.index : keep.i - 1;
    const last =
      through > 0 ? (s.get('SELECT chain_hash FROM audit_log WHERE tenant_id = ? AND chain_index = ?').get(tenantId, through) as { chain_hash: Buffer } | undefined) : undefined;
    const sealedGone = last === undefined ? 0 : (s.get('SELECT count(*) AS n FROM audit_log WHERE tenant_id = ? AND chain_index <= ?').get(tenantId, through) as { n: number }).n;
    const legacyGone = (
      s.get('SELECT count(*) AS n FROM audit_log WHERE tenant_id = ? AND chain_index IS NULL AND seq <= ? AND at < ?').get(tenantId, head.legacyThrough, before) as { n: number }
    ).n;
    if (sealedGone === 0 && legacyGone === 0) return 0;
    s.get('INSERT INTO audit_prune_permits (tenant_id) VALUES (?)').run(tenantId);
    if (sealedGone > 0) {
      // The checkpoint joins the chain before the cut entries leave it: it links to the last of
      // them, records its hash, and the first entry kept links to that hash.
      const seq = (s.get(LAST_SEQ).get() as { seq: number }).seq + 1;
      const checkpoint = sealer.checkpoint(head, { through, hash: last!.chain_hash, removed: sealedGone });
      head = this.#extend(head, [storedEntry(checkpoint, seq)], sealer, null);
      s.get('DELETE FROM audit_log WHERE tenant_id = ? AND chain_index <= ?').run(tenantId, through);
    }
    // Entries older than the chain were never part of it: they leave without a checkpoint.
    if (legacyGone > 0) s.get('DELETE FROM audit_log WHERE tenant_id = ? AND chain_index IS NULL AND seq <= ? AND at < ?').run(tenantId, head.legacyThrough, before);
    s.get('DELETE FROM audit_prune_permits WHERE tenant_id = ?').run(tenantId);
    return sealedGone + legacyGone;
  }
}
