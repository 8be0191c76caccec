import type { IdempotencyClaim, IdempotencyRecord, IdempotencyResponse } from '../store.js';
import { checkLimit } from '../limit.js';
import type { PgExecutor } from './pg-executor.js';
import { toIdempotency } from './record-rows.js';
import type { RecordStatements } from './record-sql.js';

const json = (value: unknown) => JSON.stringify(value);

type ClaimResult = { claimed: true } | { claimed: false; existing: IdempotencyRecord };

/** Idempotency keys: a part of the PostgreSQL store (store-parts.ts). */
export class PostgresIdempotency {
  readonly #db: PgExecutor;
  readonly #s: string;
  readonly #sql: RecordStatements;

  constructor(db: PgExecutor, s: string, sql: RecordStatements) {
    this.#db = db;
    this.#s = s;
    this.#sql = sql;
  }

  claimIdempotencyKey(record: IdempotencyRecord, now: number): Promise<ClaimResult> {
    return this.#db.transaction(async (tx): Promise<ClaimResult> => {
      const claim = await tx.query(this.#sql.claimIdempotency, [record.tenantId, record.applicationId, record.key, record.requestHash, record.createdAt, record.expiresAt, now]);
      if (claim.rowCount === 1) return { claimed: true };
      // Not claimed: an unexpired record exists, and the claim locked it (record-sql.ts).
      const { rows } = await tx.query(this.#sql.getIdempotency, [record.tenantId, record.applicationId, record.key]);
      return { claimed: false, existing: toIdempotency(rows[0]!) };
    });
  }

  /** Only the claim's in-flight record is completed: a done one keeps its first response. One transaction (see Store). */
  completeIdempotencyKey(claim: IdempotencyClaim, response: IdempotencyResponse): Promise<void> {
    const { tenantId, applicationId, key, claimedAt } = claim;
    const sql = this.#sql;
    return this.#db.transaction(async (tx) => {
      if ((await tx.query(sql.lockInFlightIdempotency, [tenantId, applicationId, key, claimedAt])).rows.length === 0) return;
      const ids = [...new Set(response.tokenIds)];
      const { rows } = ids.length === 0 ? { rows: [] } : await tx.query(sql.idempotencyTokenTimes, [tenantId, ids]);
      if (rows.length < ids.length && (await tx.query(sql.idempotencyTokenDeleted, [tenantId, ids])).rows.length > 0) {
        await tx.query(sql.withdrawIdempotency, [response.expiresAt, tenantId, applicationId, key, claimedAt]);
        return;
      }
      let withdrawAt: number | null = null;
      for (const row of rows) {
        for (const at of [row['expires_at'], row['cvc_purge_at']] as (number | null)[]) if (at !== null && (withdrawAt === null || at < withdrawAt)) withdrawAt = at;
      }
      await tx.query(sql.completeIdempotency, [response.status, response.body, response.expiresAt, withdrawAt, tenantId, applicationId, key, claimedAt]);
      if (rows.length > 0) await tx.query(sql.insertIdempotencyTokens, [tenantId, rows.map((row) => row['id'] as string), applicationId, key, claimedAt]);
    });
  }

  /** Only the claim's in-flight record is released: a done one keeps answering retries. */
  async releaseIdempotencyKey(claim: IdempotencyClaim): Promise<void> {
    await this.#db.query(this.#sql.releaseIdempotency, [claim.tenantId, claim.applicationId, claim.key, claim.claimedAt]);
  }

  async purgeExpiredIdempotencyKeys(now: number, limit: number): Promise<number> {
    return (await this.#db.query(this.#sql.purgeExpiredIdempotency, [now, checkLimit(limit)])).rowCount ?? 0;
  }
}
