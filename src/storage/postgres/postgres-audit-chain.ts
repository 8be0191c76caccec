import { needsChainStart } from '../audit-chain-store.js';
import { AUDIT_ENTRY_COLUMNS, AUDIT_HEAD_COLUMNS, CHAINED_AUDIT_COLUMNS, storedEntry, toAuditHead, toStoredAudit } from '../areas/audit-rows.js';
import type { AuditChainHead, AuditEntry, AuditSeal, AuditSealer, StoredAuditEntry } from '../store.js';
import type { Queryable } from './pg-executor.js';

/** The audit log's writing statements for a schema (`s`: its quoted name); its reads are areas/audit.ts's. */
export function auditChainStatements(s: string) {
  return Object.freeze({
    /** Unsealed entries as seven arrays (one per column); rows are inserted, and numbered, in array order. */
    appendUnsealed:
      `INSERT INTO ${s}.audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at) ` +
      'SELECT e.tenant_id, e.actor, e.operation, e.resource_id, e.outcome, e.detail, e.at ' +
      'FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int8[]) WITH ORDINALITY ' +
      'AS e (tenant_id, actor, operation, resource_id, outcome, detail, at, n) ORDER BY e.n',
    /**
     * Creates the missing heads and locks every head of $1 (sorted: two writers lock in the same
     * order), answering them: the update that changes nothing is what takes the row lock.
     */
    lockHeads:
      `INSERT INTO ${s}.audit_heads (${AUDIT_HEAD_COLUMNS}) SELECT t, 0, NULL, 0 FROM unnest($1::text[]) AS t ` +
      `ON CONFLICT (tenant_id) DO UPDATE SET chain_index = ${s}.audit_heads.chain_index RETURNING ${AUDIT_HEAD_COLUMNS}`,
    /** The unsealed entries of the tenants $1 past their legacy boundaries $2, by tenant and seq. */
    pending:
      `SELECT a.${AUDIT_ENTRY_COLUMNS.split(', ').join(', a.')} FROM ${s}.audit_log a JOIN unnest($1::text[], $2::int8[]) AS h(t, legacy) ON a.tenant_id = h.t ` +
      'WHERE a.chain_index IS NULL AND a.seq > h.legacy ORDER BY a.tenant_id, a.seq',
    /** $1 seqs for new entries, chosen before they are written so their hashes can cover them. */
    nextSeqs: `SELECT nextval(pg_get_serial_sequence('${s}.audit_log', 'seq')) AS seq FROM generate_series(1, $1::int4)`,
    /** Eleven arrays, one per column. */
    insertSealed:
      `INSERT INTO ${s}.audit_log (${CHAINED_AUDIT_COLUMNS}) OVERRIDING SYSTEM VALUE ` +
      'SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int8[], $9::int8[], $10::bytea[], $11::bytea[])',
    /** $1 tenants, $2 seqs, $3 positions, $4 hashes, $5 MACs. */
    seal:
      `UPDATE ${s}.audit_log a SET chain_index = u.i, chain_hash = u.h, chain_mac = u.m ` +
      'FROM unnest($1::text[], $2::int8[], $3::int8[], $4::bytea[], $5::bytea[]) AS u(t, seq, i, h, m) WHERE a.tenant_id = u.t AND a.seq = u.seq',
    /** $1 tenants, $2 positions, $3 hashes. */
    setHeads: `UPDATE ${s}.audit_heads h SET chain_index = u.i, chain_hash = u.h FROM unnest($1::text[], $2::int8[], $3::bytea[]) AS u(t, i, h) WHERE h.tenant_id = u.t`,
  });
}

export type AuditChainStatements = ReturnType<typeof auditChainStatements>;

/**
 * Seals inside a transaction: locks the heads of every tenant concerned (a concurrent writer of
 * the same tenant, on this instance or another, waits for the commit), seals their unsealed entries
 * then `fresh`, and moves the heads. Answers the heads after.
 */
export async function sealInto(tx: Queryable, sql: AuditChainStatements, fresh: readonly AuditEntry[], sealer: AuditSealer): Promise<Map<string, AuditChainHead>> {
  const tenants = [...new Set([...sealer.tenants, ...fresh.map((e) => e.tenantId)])].sort();
  const heads = new Map<string, AuditChainHead>();
  for (const row of (await tx.query(sql.lockHeads, [tenants])).rows) heads.set(row['tenant_id'] as string, toAuditHead(row));
  // Each tenant's entries in chain order: its chain-start entry when its chain begins now, its
  // unsealed entries, then the fresh ones. Entries not stored yet (chain-start, fresh) get seqs here.
  const starting = tenants.filter((t) => needsChainStart(heads.get(t)!));
  const newCount = starting.length + fresh.length;
  const seqs = newCount === 0 ? [] : (await tx.query(sql.nextSeqs, [newCount])).rows.map((r) => r['seq'] as number);
  const byTenant = new Map<string, StoredAuditEntry[]>(tenants.map((t) => [t, []]));
  starting.forEach((t, i) => byTenant.get(t)!.push(storedEntry(sealer.start(heads.get(t)!), seqs[i]!)));
  const pendingRows = (await tx.query(sql.pending, [tenants, tenants.map((t) => heads.get(t)!.legacyThrough)])).rows;
  /** The entries already stored, which are sealed in place rather than inserted. */
  const stored = new Set<StoredAuditEntry>();
  for (const row of pendingRows) {
    const entry = toStoredAudit(row);
    byTenant.get(entry.tenantId)!.push(entry);
    stored.add(entry);
  }
  fresh.forEach((e, i) => byTenant.get(e.tenantId)!.push(storedEntry(e, seqs[starting.length + i]!)));
  const sealedPending: [string, number, AuditSeal][] = [];
  const inserted: [StoredAuditEntry, AuditSeal][] = [];
  const moved: AuditChainHead[] = [];
  for (const tenantId of tenants) {
    const entries = byTenant.get(tenantId)!;
    if (entries.length === 0) continue;
    const head = heads.get(tenantId)!;
    const seals = sealer.seal(head, entries);
    entries.forEach((e, i) => (stored.has(e) ? sealedPending.push([tenantId, e.seq, seals[i]!]) : inserted.push([e, seals[i]!])));
    const last = seals.at(-1)!;
    const next = { ...head, index: last.index, hash: last.hash };
    heads.set(tenantId, next);
    moved.push(next);
  }
  if (sealedPending.length > 0) {
    await tx.query(sql.seal, [
      sealedPending.map((p) => p[0]),
      sealedPending.map((p) => p[1]),
      sealedPending.map((p) => p[2].index),
      sealedPending.map((p) => p[2].hash),
      sealedPending.map((p) => p[2].mac),
    ]);
  }
  if (inserted.length > 0) {
    const col = <T>(f: (e: StoredAuditEntry, s: AuditSeal) => T) => inserted.map(([e, s]) => f(e, s));
    await tx.query(sql.insertSealed, [
      col((e) => e.seq),
      col((e) => e.tenantId),
      col((e) => e.actor),
      col((e) => e.operation),
      col((e) => e.resourceId ?? null),
      col((e) => e.outcome),
      col((e) => e.detail ?? null),
      col((e) => e.at),
      col((_, s) => s.index),
      col((_, s) => s.hash),
      col((_, s) => s.mac),
    ]);
  }
  if (moved.length > 0) await tx.query(sql.setHeads, [moved.map((h) => h.tenantId), moved.map((h) => h.index), moved.map((h) => h.hash)]);
  return heads;
}
