import { checkLimit } from '../limit.js';
import type { StoredTokenIntent } from '../store.js';
import { embedded, operation, query, RollBack, type AreaOperations, type Row } from '../sql/operation.js';
import { lock, raw, sql, table } from '../sql/sql.js';

const INTENTS = table('token_intents');
const COLUMNS = raw('tenant_id, id, type, sealed, fingerprint, created_by, created_at, expires_at');

const toIntent = (row: Row): StoredTokenIntent => ({
  tenantId: row['tenant_id'] as string,
  id: row['id'] as string,
  type: row['type'] as string,
  sealed: row['sealed'] as Uint8Array,
  fingerprint: row['fingerprint'] as string | null,
  createdBy: row['created_by'] as string,
  createdAt: row['created_at'] as number,
  expiresAt: row['expires_at'] as number,
});

// token_intents names its tenant by id on both stores (unlike SQLite's token tables, tenant_keys).
export const TOKEN_INTENTS_SQL = {
  insert: sql`INSERT INTO ${INTENTS} (${COLUMNS}) VALUES (${1}, ${2}, ${3}, ${4}, ${5}, ${6}, ${7}, ${8}) ON CONFLICT DO NOTHING`,
  getLive: sql`SELECT ${COLUMNS} FROM ${INTENTS} WHERE tenant_id = ${1} AND id = ${2} AND expires_at > ${3}`,
  deleteLive: sql`DELETE FROM ${INTENTS} WHERE tenant_id = ${1} AND id = ${2} AND expires_at > ${3}`,
  /** Rows another instance is purging are skipped, not waited for. */
  purgeExpired: sql`DELETE FROM ${INTENTS} WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM ${INTENTS} WHERE expires_at <= ${1} ORDER BY expires_at LIMIT ${2}${lock('update skip locked')})`,
};

const SQL = TOKEN_INTENTS_SQL;

/** Token intents (store-parts.ts, area `tokenIntents`). */
export const TOKEN_INTENTS: AreaOperations<'tokenIntents'> = {
  createTokenIntent: operation('statement', function* (_d, intent) {
    const { tenantId, id, type, sealed, fingerprint, createdBy, createdAt, expiresAt } = intent;
    return (yield query(SQL.insert, tenantId, id, type, sealed, fingerprint, createdBy, createdAt, expiresAt)).changes === 0 ? 'exists' : 'created';
  }),

  getTokenIntent: operation('statement', function* (_d, tenantId, id, now) {
    const row = (yield query(SQL.getLive, tenantId, id, now)).rows[0];
    return row === undefined ? null : toIntent(row);
  }),

  deleteTokenIntent: operation('statement', function* (_d, tenantId, id, now) {
    return (yield query(SQL.deleteLive, tenantId, id, now)).changes === 1;
  }),

  /**
   * One write transaction. The intent's removal decides which of two conversions creates the token
   * (on PostgreSQL the DELETE locks the row, so a concurrent conversion waits, then finds it gone
   * and answers not_found); the token is created by the token area's own creation (an embedded
   * call), and an id conflict rolls the removal back.
   */
  convertTokenIntent: operation('write', function* (_d, intentId, token, now, dedupeWithin) {
    if ((yield query(SQL.deleteLive, token.tenantId, intentId, now)).changes !== 1) return { status: 'not_found' };
    const result = yield* embedded('createToken', token, now, dedupeWithin);
    if (result.status === 'id_conflict') throw new RollBack(result);
    return result;
  }),

  purgeExpiredTokenIntents: operation('statement', function* (_d, now, limit) {
    return (yield query(SQL.purgeExpired, now, checkLimit(limit))).changes;
  }),
};
