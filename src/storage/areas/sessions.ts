import type { SessionGrants, SessionRecord } from '../store.js';
import type { Dialect } from '../sql/dialect.js';
import { operation, query, type AreaOperations, type Row } from '../sql/operation.js';
import { AS_JSON } from '../sql/record-update.js';
import { byDialect, lock, raw, sql, table } from '../sql/sql.js';

// Sessions: the half of the `credentials` area (credentials.ts) that a key's holder opens and a management application authorizes.

const SESSIONS_TABLE = table('sessions');
const COLUMNS = raw(
  'tenant_id, id, application_id, key_hash, key_lookup, nonce_hash, created_at, expires_at, authorized_by, authorized_at, grants, creator_generation, authorizer_generation',
);

const toSession = (d: Dialect, row: Row): SessionRecord => ({
  id: row['id'] as string,
  tenantId: row['tenant_id'] as string,
  applicationId: row['application_id'] as string,
  creatorGeneration: row['creator_generation'] as number,
  keyHash: row['key_hash'] as string,
  keyLookup: row['key_lookup'] as string,
  nonceHash: row['nonce_hash'] as string,
  createdAt: row['created_at'] as number,
  expiresAt: row['expires_at'] as number,
  authorizedBy: row['authorized_by'] as string | null,
  authorizedAt: row['authorized_at'] as number | null,
  grants: row['grants'] === null || row['grants'] === undefined ? null : d.json<SessionGrants>(row['grants']),
  authorizerGeneration: row['authorizer_generation'] as number | null,
});

export const SESSIONS_SQL = {
  /** Nothing written when the id or the tenant's nonce hash is taken (either unique index). */
  insertSession: sql`INSERT INTO ${SESSIONS_TABLE} (${COLUMNS}) VALUES (${1}, ${2}, ${3}, ${4}, ${5}, ${6}, ${7}, ${8}, ${9}, ${10}, ${11}${AS_JSON}, ${12}, ${13}) ON CONFLICT DO NOTHING`,
  findSessions: sql`SELECT ${COLUMNS} FROM ${SESSIONS_TABLE} WHERE key_lookup = ${1}`,
  /** Of racing authorizations only one matches the pending row (on PostgreSQL the second waits for it, then no longer matches). */
  authorizeSession: sql`UPDATE ${SESSIONS_TABLE} SET authorized_by = ${1}, authorized_at = ${2}, grants = ${3}${AS_JSON}, authorizer_generation = ${4}, expires_at = ${byDialect({ sqlite: 'min', postgres: 'LEAST' })}(expires_at, ${5}) WHERE tenant_id = ${6} AND nonce_hash = ${7} AND authorized_by IS NULL AND expires_at > ${8} RETURNING ${COLUMNS}`,
  sessionExpiry: sql`SELECT expires_at FROM ${SESSIONS_TABLE} WHERE tenant_id = ${1} AND nonce_hash = ${2}`,
  /** Rows another instance is purging are skipped, not waited for. */
  purgeSessions: sql`DELETE FROM ${SESSIONS_TABLE} WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM ${SESSIONS_TABLE} WHERE expires_at <= ${1} ORDER BY expires_at LIMIT ${2}${lock('update skip locked')})`,
};

const SQL = SESSIONS_SQL;

type SessionMethods = 'createSession' | 'findSessions' | 'authorizeSession' | 'purgeExpiredSessions';

export const SESSIONS: Pick<AreaOperations<'credentials'>, SessionMethods> = {
  createSession: operation('statement', function* (_d, s) {
    const grants = s.grants === null ? null : JSON.stringify(s.grants);
    const args = [s.tenantId, s.id, s.applicationId, s.keyHash, s.keyLookup, s.nonceHash, s.createdAt, s.expiresAt, s.authorizedBy, s.authorizedAt, grants];
    return (yield query(SQL.insertSession, ...args, s.creatorGeneration ?? 0, s.authorizerGeneration ?? null)).changes === 0 ? 'exists' : 'created';
  }),

  findSessions: operation('statement', function* (d, keyLookup) {
    return (yield query(SQL.findSessions, keyLookup)).rows.map((row) => toSession(d, row));
  }),

  authorizeSession: operation('statement', function* (d, tenantId, nonceHash, a, now) {
    const grants = JSON.stringify(a.grants);
    const updated = yield query(
      SQL.authorizeSession,
      a.authorizedBy,
      a.authorizedAt,
      grants,
      a.authorizerGeneration,
      a.expiresAt ?? Number.MAX_SAFE_INTEGER,
      tenantId,
      nonceHash,
      now,
    );
    if (updated.rows.length === 1) return { status: 'authorized', session: toSession(d, updated.rows[0]!) };
    const row = (yield query(SQL.sessionExpiry, tenantId, nonceHash)).rows[0];
    if (row === undefined || (row['expires_at'] as number) <= now) return { status: 'not_found' };
    return { status: 'already_authorized' };
  }),

  purgeExpiredSessions: operation('statement', function* (_d, now, limit) {
    return (yield query(SQL.purgeSessions, now, limit)).changes;
  }),
};
