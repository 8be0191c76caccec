import type { IdempotencyClaim, IdempotencyRecord, IdempotencyResponse } from '../store.js';
import { checkLimit } from '../limit.js';
import { toIdempotency, type IdempotencyRow } from './record-rows.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import type { StatementCache } from './statement-cache.js';

type ClaimResult = { claimed: true } | { claimed: false; existing: IdempotencyRecord };

const SQL = {
  getIdempotency:
    'SELECT tenant_id, application_id, key, request_hash, state, status, body, created_at, expires_at, withdraw_at FROM idempotency_keys ' +
    'WHERE tenant_id = ? AND application_id = ? AND key = ?',
  claimIdempotency:
    "INSERT INTO idempotency_keys (tenant_id, application_id, key, request_hash, state, status, body, created_at, expires_at) VALUES (?, ?, ?, ?, 'in_flight', NULL, NULL, ?, ?) " +
    "ON CONFLICT (tenant_id, application_id, key) DO UPDATE SET request_hash = excluded.request_hash, state = 'in_flight', status = NULL, body = NULL, " +
    'created_at = excluded.created_at, expires_at = excluded.expires_at, withdraw_at = NULL',
  inFlightIdempotency: "SELECT 1 FROM idempotency_keys WHERE tenant_id = ? AND application_id = ? AND key = ? AND state = 'in_flight' AND created_at = ?",
  completeIdempotency:
    "UPDATE idempotency_keys SET state = 'done', status = ?, body = ?, expires_at = ?, withdraw_at = ? WHERE tenant_id = ? AND application_id = ? AND key = ? AND created_at = ?",
  withdrawIdempotency:
    "UPDATE idempotency_keys SET state = 'withdrawn', status = NULL, body = NULL, expires_at = ?, withdraw_at = NULL WHERE tenant_id = ? AND application_id = ? AND key = ? AND created_at = ?",
  idempotencyTokenTimes: 'SELECT expires_at, cvc_purge_at FROM tokens WHERE tenant = (SELECT key FROM tenant_keys WHERE id = ?) AND id = ?',
  idempotencyTokenDeleted: 'SELECT 1 FROM deleted_tokens WHERE tenant = (SELECT key FROM tenant_keys WHERE id = ?) AND id = ?',
  insertIdempotencyToken: 'INSERT INTO idempotency_tokens (tenant_id, token_id, application_id, key, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
  releaseIdempotency: "DELETE FROM idempotency_keys WHERE tenant_id = ? AND application_id = ? AND key = ? AND state = 'in_flight' AND created_at = ?",
  purgeExpiredIdempotency:
    'DELETE FROM idempotency_keys WHERE (tenant_id, application_id, key) IN ' +
    '(SELECT tenant_id, application_id, key FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)',
} as const;

/** Idempotency keys: a part of the SQLite store's synchronous core (see sqlite-boundary.ts). */
export class SqliteIdempotency {
  #statements: StatementCache;
  #claimTx: SqliteTransaction<(record: IdempotencyRecord, now: number) => ClaimResult>;
  #completeTx: SqliteTransaction<(claim: IdempotencyClaim, response: IdempotencyResponse) => void>;

  constructor(db: BetterSqlite3Database, statements: StatementCache) {
    this.#statements = statements;
    this.#claimTx = db.transaction(this.#claim);
    this.#completeTx = db.transaction(this.#complete);
  }

  claimIdempotencyKey(record: IdempotencyRecord, now: number): ClaimResult {
    return this.#claimTx.immediate(record, now);
  }

  /** Only the claim's in-flight record is completed: a done one keeps its first response. One transaction. */
  completeIdempotencyKey(claim: IdempotencyClaim, response: IdempotencyResponse): void {
    this.#completeTx.immediate(claim, response);
  }

  /** Only the claim's in-flight record is released: a done one keeps answering retries. */
  releaseIdempotencyKey(claim: IdempotencyClaim): void {
    this.#statements.get(SQL.releaseIdempotency).run(claim.tenantId, claim.applicationId, claim.key, claim.claimedAt);
  }

  purgeExpiredIdempotencyKeys(now: number, limit: number): number {
    return this.#statements.get(SQL.purgeExpiredIdempotency).run(now, checkLimit(limit)).changes;
  }

  /** See Store.completeIdempotencyKey. Under the write lock, so no deletion interleaves. */
  #complete = (claim: IdempotencyClaim, response: IdempotencyResponse): void => {
    const statements = this.#statements;
    const { tenantId, applicationId, key, claimedAt } = claim;
    if (statements.get(SQL.inFlightIdempotency).get(tenantId, applicationId, key, claimedAt) === undefined) return;
    const tokens: string[] = [];
    let withdrawAt: number | null = null;
    for (const id of new Set(response.tokenIds)) {
      const times = statements.get(SQL.idempotencyTokenTimes).get(tenantId, id) as { expires_at: number | null; cvc_purge_at: number | null } | undefined;
      if (times === undefined) {
        if (statements.get(SQL.idempotencyTokenDeleted).get(tenantId, id) !== undefined) {
          statements.get(SQL.withdrawIdempotency).run(response.expiresAt, tenantId, applicationId, key, claimedAt);
          return;
        }
        continue; // not a token id (a reactor's id, a value the client chose): nothing to follow
      }
      tokens.push(id);
      for (const at of [times.expires_at, times.cvc_purge_at]) if (at !== null && (withdrawAt === null || at < withdrawAt)) withdrawAt = at;
    }
    statements.get(SQL.completeIdempotency).run(response.status, response.body, response.expiresAt, withdrawAt, tenantId, applicationId, key, claimedAt);
    const insert = statements.get(SQL.insertIdempotencyToken);
    for (const id of tokens) insert.run(tenantId, id, applicationId, key, claimedAt);
  };

  #claim = (record: IdempotencyRecord, now: number): ClaimResult => {
    const row = this.#statements.get(SQL.getIdempotency).get(record.tenantId, record.applicationId, record.key) as IdempotencyRow | undefined;
    if (row !== undefined && row.expires_at > now) return { claimed: false, existing: toIdempotency(row) };
    this.#statements.get(SQL.claimIdempotency).run(record.tenantId, record.applicationId, record.key, record.requestHash, record.createdAt, record.expiresAt);
    return { claimed: true };
  };
}
