import type { ApplicationKeyMatch, ApplicationKeyRecord, SessionGrants } from '../store.js';
import type { Dialect } from '../sql/dialect.js';
import { operation, query, type AreaOperations, type Row, type Steps } from '../sql/operation.js';
import { AS_JSON } from '../sql/record-update.js';
import { lock, raw, sql, table } from '../sql/sql.js';
import { APPLICATION_COLUMNS, toApplication } from './application-rows.js';
import { SESSIONS, SESSIONS_SQL } from './sessions.js';

const KEYS = table('application_keys');
const APPLICATIONS = table('applications');
const KEY_COLUMNS = raw('k.tenant_id, k.application_id, k.id, k.key_hash, k.key_lookup, k.created_by, k.created_at, k.grants');

const grantsOf = (d: Dialect, value: unknown): SessionGrants | null => (value === null || value === undefined ? null : d.json<SessionGrants>(value));

const toKey = (d: Dialect, row: Row): ApplicationKeyRecord => ({
  id: row['id'] as string,
  tenantId: row['tenant_id'] as string,
  applicationId: row['application_id'] as string,
  keyHash: row['key_hash'] as string,
  keyLookup: row['key_lookup'] as string,
  createdBy: row['created_by'] as string | null,
  createdAt: row['created_at'] as number,
  grants: grantsOf(d, row['grants']),
});

/** A key lookup's row: the key's columns (aliased where the application has a column of that name), then the application's. */
const toKeyMatch = (d: Dialect, row: Row): ApplicationKeyMatch => ({
  key: {
    id: row['key_id'] as string,
    tenantId: row['tenant_id'] as string,
    applicationId: row['id'] as string,
    keyHash: row['key_hash'] as string,
    keyLookup: row['key_lookup'] as string,
    createdBy: row['key_created_by'] as string | null,
    createdAt: row['key_created_at'] as number,
    grants: grantsOf(d, row['key_grants']),
  },
  application: toApplication(d, row),
});

export const CREDENTIALS_SQL = {
  insertKey: sql`INSERT INTO ${KEYS} (tenant_id, application_id, id, key_hash, key_lookup, created_by, created_at, grants) VALUES (${1}, ${2}, ${3}, ${4}, ${5}, ${6}, ${7}, ${8}${AS_JSON})`,
  /** The request path's lookup: every key of any tenant with this lookup, joined to its application. */
  findKeys: sql`SELECT k.id AS key_id, k.key_hash, k.key_lookup, k.created_by AS key_created_by, k.created_at AS key_created_at, k.grants AS key_grants, ${APPLICATION_COLUMNS} FROM ${KEYS} k JOIN ${APPLICATIONS} t ON t.tenant_id = k.tenant_id AND t.id = k.application_id WHERE k.key_lookup = ${1}`,
  /** Proves the application exists and, on PostgreSQL, serializes key changes of one application across instances. */
  lockApplication: sql`SELECT 1 FROM ${APPLICATIONS} WHERE tenant_id = ${1} AND id = ${2}${lock('update')}`,
  countKeys: sql`SELECT count(*) AS n FROM ${KEYS} WHERE tenant_id = ${1} AND application_id = ${2}`,
  listKeys: sql`SELECT ${KEY_COLUMNS} FROM ${KEYS} k WHERE k.tenant_id = ${1} AND k.application_id = ${2} ORDER BY k.seq`,
  getKey: sql`SELECT ${KEY_COLUMNS} FROM ${KEYS} k WHERE k.tenant_id = ${1} AND k.application_id = ${2} AND k.id = ${3}`,
  deleteKey: sql`DELETE FROM ${KEYS} WHERE tenant_id = ${1} AND application_id = ${2} AND id = ${3}`,
  deleteKeys: sql`DELETE FROM ${KEYS} WHERE tenant_id = ${1} AND application_id = ${2}`,
  /** In the statement, not read and written back: no change of credentials is lost to a race. */
  nextGeneration: sql`UPDATE ${APPLICATIONS} SET credentials_generation = credentials_generation + 1 WHERE tenant_id = ${1} AND id = ${2}`,
  stampApplication: sql`UPDATE ${APPLICATIONS} SET modified_by = ${1}, modified_at = ${2}, credentials_generation = credentials_generation + 1 WHERE tenant_id = ${3} AND id = ${4}`,
  ...SESSIONS_SQL,
};

const SQL = CREDENTIALS_SQL;

/** Inserts a key row, inside the caller's transaction (createApplication's, createTenant's). */
export function* insertKey(key: ApplicationKeyRecord): Steps<void> {
  const { tenantId, applicationId, id, keyHash, keyLookup, createdBy, createdAt, grants } = key;
  yield query(SQL.insertKey, tenantId, applicationId, id, keyHash, keyLookup, createdBy ?? null, createdAt, grants == null ? null : JSON.stringify(grants));
}

function* countKeys(tenantId: string, applicationId: string): Steps<number> {
  return (yield query(SQL.countKeys, tenantId, applicationId)).rows[0]!['n'] as number;
}

/**
 * Application keys and sessions (store-parts.ts, area `credentials`; see the Store interface for
 * each guarantee). Key changes of one application lock its row first (SQL.lockApplication), so
 * they queue across PostgreSQL instances; SQLite's write transactions hold its one write lock.
 */
export const CREDENTIALS: AreaOperations<'credentials'> = {
  findApplicationKeys: operation('statement', function* (d, keyLookup) {
    return (yield query(SQL.findKeys, keyLookup)).rows.map((row) => toKeyMatch(d, row));
  }),

  createApplicationKey: operation('write', function* (_d, key, max) {
    if ((yield query(SQL.lockApplication, key.tenantId, key.applicationId)).rows.length === 0) return 'not_found';
    if ((yield* countKeys(key.tenantId, key.applicationId)) >= max) return 'limit';
    yield* insertKey(key);
    return 'created';
  }),

  listApplicationKeys: operation('statement', function* (d, tenantId, applicationId) {
    return (yield query(SQL.listKeys, tenantId, applicationId)).rows.map((row) => toKey(d, row));
  }),

  getApplicationKey: operation('statement', function* (d, tenantId, applicationId, keyId) {
    const row = (yield query(SQL.getKey, tenantId, applicationId, keyId)).rows[0];
    return row === undefined ? null : toKey(d, row);
  }),

  deleteApplicationKey: operation('write', function* (_d, tenantId, applicationId, keyId) {
    if ((yield query(SQL.lockApplication, tenantId, applicationId)).rows.length === 0) return 'not_found';
    if ((yield query(SQL.getKey, tenantId, applicationId, keyId)).rows.length === 0) return 'not_found';
    if ((yield* countKeys(tenantId, applicationId)) <= 1) return 'last_key';
    yield query(SQL.deleteKey, tenantId, applicationId, keyId);
    yield query(SQL.nextGeneration, tenantId, applicationId);
    return 'deleted';
  }),

  replaceApplicationKeys: operation('write', function* (_d, key, modifiedBy) {
    if ((yield query(SQL.stampApplication, modifiedBy, key.createdAt, key.tenantId, key.applicationId)).changes !== 1) return false;
    yield query(SQL.deleteKeys, key.tenantId, key.applicationId);
    yield* insertKey(key);
    return true;
  }),

  ...SESSIONS,
};
