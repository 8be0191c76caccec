import type { IdempotencyRecord } from '../store.js';
import { checkLimit } from '../limit.js';
import { inList, listRows, lock, raw, sql, table } from '../sql/sql.js';
import { operation, query, type AreaOperations, type Row } from '../sql/operation.js';
import { DELETED_REFERENCES, NOT_DELETED, tenantKey } from './token-layout.js';

const KEYS = table('idempotency_keys');
const COLUMNS = raw('tenant_id, application_id, key, request_hash, state, status, body, created_at, expires_at, withdraw_at');

const toIdempotency = (row: Row): IdempotencyRecord => ({
  tenantId: row['tenant_id'] as string,
  applicationId: row['application_id'] as string,
  key: row['key'] as string,
  requestHash: row['request_hash'] as string,
  state: row['state'] as IdempotencyRecord['state'],
  status: row['status'] as number | null,
  body: row['body'] as Uint8Array | null,
  createdAt: row['created_at'] as number,
  expiresAt: row['expires_at'] as number,
  withdrawAt: row['withdraw_at'] as number | null,
});

export const IDEMPOTENCY_SQL = {
  /**
   * Inserts an in-flight record, or replaces an expired one (7: now). On PostgreSQL, ON CONFLICT DO
   * UPDATE locks the existing row even when its WHERE is false, so the caller can then read the live
   * record knowing no one changes it before the transaction ends (SQLite holds the write lock).
   */
  claim: sql`INSERT INTO ${KEYS} AS k (${COLUMNS}) VALUES (${1}, ${2}, ${3}, ${4}, 'in_flight', NULL, NULL, ${5}, ${6}, NULL) ON CONFLICT (tenant_id, application_id, key) DO UPDATE SET request_hash = excluded.request_hash, state = 'in_flight', status = NULL, body = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at, withdraw_at = NULL WHERE k.expires_at <= ${7} RETURNING 1`,
  get: sql`SELECT ${COLUMNS} FROM ${KEYS} WHERE tenant_id = ${1} AND application_id = ${2} AND key = ${3}`,
  /** tenant, application, key, claimedAt: locks the claim's record while it is in flight. */
  lockInFlight: sql`SELECT 1 FROM ${KEYS} WHERE tenant_id = ${1} AND application_id = ${2} AND key = ${3} AND state = 'in_flight' AND created_at = ${4}${lock('update')}`,
  /** tenant, ids: the tokens among ids with their expiry and cvc purge time, share-locked so a concurrent deletion waits for the completion and then sees its references. */
  tokenTimes: sql`SELECT id, expires_at, cvc_purge_at FROM ${table('tokens')} WHERE tenant = ${tenantKey(1)} AND id ${inList(2, 'text')}${NOT_DELETED}${lock('share')}`,
  /** tenant, ids: a row when one of ids names a deleted token. */
  tokenDeleted: sql`SELECT 1 FROM ${DELETED_REFERENCES} AND tenant = ${tenantKey(1)} AND id ${inList(2, 'text')} LIMIT 1`,
  complete: sql`UPDATE ${KEYS} SET state = 'done', status = ${1}, body = ${2}, expires_at = ${3}, withdraw_at = ${4} WHERE tenant_id = ${5} AND application_id = ${6} AND key = ${7} AND created_at = ${8}`,
  withdraw: sql`UPDATE ${KEYS} SET state = 'withdrawn', status = NULL, body = NULL, expires_at = ${1}, withdraw_at = NULL WHERE tenant_id = ${2} AND application_id = ${3} AND key = ${4} AND created_at = ${5}`,
  /** tenant, token ids, application, key, claimedAt. (WHERE true: SQLite's parser needs a WHERE before an upsert's ON CONFLICT.) */
  insertTokens: sql`INSERT INTO ${table('idempotency_tokens')} (tenant_id, token_id, application_id, key, created_at) SELECT ${1}, value, ${3}, ${4}, ${5} FROM ${listRows(2, 'text')} WHERE true ON CONFLICT DO NOTHING`,
  release: sql`DELETE FROM ${KEYS} WHERE tenant_id = ${1} AND application_id = ${2} AND key = ${3} AND state = 'in_flight' AND created_at = ${4}`,
  /**
   * Rows another instance is deleting (or claiming) are skipped, not waited for. By key, not by a
   * physical row id: that is unique only within one table's storage, not across a distributed
   * table's shards (docs/scaling.md).
   */
  purgeExpired: sql`DELETE FROM ${KEYS} WHERE (tenant_id, application_id, key) IN (SELECT tenant_id, application_id, key FROM ${KEYS} WHERE expires_at <= ${1} ORDER BY expires_at LIMIT ${2}${lock('update skip locked')})`,
};

const SQL = IDEMPOTENCY_SQL;

/** Idempotency keys (store-parts.ts, area `idempotency`). */
export const IDEMPOTENCY: AreaOperations<'idempotency'> = {
  claimIdempotencyKey: operation('write', function* (_d, record, now) {
    const claim = yield query(SQL.claim, record.tenantId, record.applicationId, record.key, record.requestHash, record.createdAt, record.expiresAt, now);
    if (claim.rows.length === 1) return { claimed: true };
    // Not claimed: an unexpired record exists, and it is locked (see SQL.claim).
    const { rows } = yield query(SQL.get, record.tenantId, record.applicationId, record.key);
    return { claimed: false, existing: toIdempotency(rows[0]!) };
  }),

  /** Only the claim's in-flight record is completed: a done one keeps its first response. */
  completeIdempotencyKey: operation('write', function* (_d, claim, response) {
    const { tenantId, applicationId, key, claimedAt } = claim;
    if ((yield query(SQL.lockInFlight, tenantId, applicationId, key, claimedAt)).rows.length === 0) return;
    const ids = [...new Set(response.tokenIds)];
    const rows = ids.length === 0 ? [] : (yield query(SQL.tokenTimes, tenantId, ids)).rows;
    // An id that is not a token may be a reactor's id or a value the client chose: nothing to follow. A deleted token's is.
    if (rows.length < ids.length && (yield query(SQL.tokenDeleted, tenantId, ids)).rows.length > 0) {
      yield query(SQL.withdraw, response.expiresAt, tenantId, applicationId, key, claimedAt);
      return;
    }
    let withdrawAt: number | null = null;
    for (const row of rows) {
      for (const at of [row['expires_at'], row['cvc_purge_at']] as (number | null)[]) if (at !== null && (withdrawAt === null || at < withdrawAt)) withdrawAt = at;
    }
    yield query(SQL.complete, response.status, response.body, response.expiresAt, withdrawAt, tenantId, applicationId, key, claimedAt);
    if (rows.length > 0)
      yield query(
        SQL.insertTokens,
        tenantId,
        rows.map((row) => row['id'] as string),
        applicationId,
        key,
        claimedAt,
      );
  }),

  /** Only the claim's in-flight record is released: a done one keeps answering retries. */
  releaseIdempotencyKey: operation('statement', function* (_d, claim) {
    yield query(SQL.release, claim.tenantId, claim.applicationId, claim.key, claim.claimedAt);
  }),

  purgeExpiredIdempotencyKeys: operation('statement', function* (_d, now, limit) {
    return (yield query(SQL.purgeExpired, now, checkLimit(limit))).changes;
  }),
};
