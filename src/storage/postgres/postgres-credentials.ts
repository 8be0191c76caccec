import type { ApplicationKeyMatch, ApplicationKeyRecord, AuthorizeSessionResult, Inserted, SessionAuthorization, SessionGrants, SessionRecord } from '../store.js';
import type { PgExecutor, Queryable } from './pg-executor.js';
import { APPLICATION_COLUMNS, toApplication } from './record-rows.js';

type Row = Record<string, unknown>;

const KEY_COLUMNS = 'k.tenant_id, k.application_id, k.id, k.key_hash, k.key_lookup, k.created_by, k.created_at, k.grants';
const SESSION_COLUMNS =
  'tenant_id, id, application_id, key_hash, key_lookup, nonce_hash, created_at, expires_at, authorized_by, authorized_at, grants, creator_generation, authorizer_generation';

function statements(s: string) {
  return Object.freeze({
    insertKey:
      `INSERT INTO ${s}.application_keys (tenant_id, application_id, id, key_hash, key_lookup, created_by, created_at, grants) ` + 'VALUES ($1, $2, $3, $4, $5, $6, $7, $8::json)',
    findKeys:
      `SELECT k.id AS key_id, k.key_hash, k.key_lookup, k.created_by AS key_created_by, k.created_at AS key_created_at, k.grants AS key_grants, ${APPLICATION_COLUMNS} ` +
      `FROM ${s}.application_keys k JOIN ${s}.applications t ON t.tenant_id = k.tenant_id AND t.id = k.application_id WHERE k.key_lookup = $1`,
    /** Serializes key changes of one application (and proves it exists). */
    lockApplication: `SELECT 1 FROM ${s}.applications WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
    countKeys: `SELECT count(*)::int AS n FROM ${s}.application_keys WHERE tenant_id = $1 AND application_id = $2`,
    listKeys: `SELECT ${KEY_COLUMNS} FROM ${s}.application_keys k WHERE k.tenant_id = $1 AND k.application_id = $2 ORDER BY k.seq`,
    getKey: `SELECT ${KEY_COLUMNS} FROM ${s}.application_keys k WHERE k.tenant_id = $1 AND k.application_id = $2 AND k.id = $3`,
    deleteKey: `DELETE FROM ${s}.application_keys WHERE tenant_id = $1 AND application_id = $2 AND id = $3`,
    deleteKeys: `DELETE FROM ${s}.application_keys WHERE tenant_id = $1 AND application_id = $2`,
    /** In the statement, not read and written back: no change of credentials is lost to a race. */
    nextGeneration: `UPDATE ${s}.applications SET credentials_generation = credentials_generation + 1 WHERE tenant_id = $1 AND id = $2`,
    stampApplication: `UPDATE ${s}.applications SET modified_by = $1, modified_at = $2, credentials_generation = credentials_generation + 1 WHERE tenant_id = $3 AND id = $4`,

    insertSession: `INSERT INTO ${s}.sessions (${SESSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING`,
    findSessions: `SELECT ${SESSION_COLUMNS} FROM ${s}.sessions WHERE key_lookup = $1`,
    authorizeSession:
      `UPDATE ${s}.sessions SET authorized_by = $1, authorized_at = $2, grants = $3, authorizer_generation = $4, expires_at = LEAST(expires_at, $5) ` +
      `WHERE tenant_id = $6 AND nonce_hash = $7 AND authorized_by IS NULL AND expires_at > $8 RETURNING ${SESSION_COLUMNS}`,
    sessionByNonce: `SELECT expires_at FROM ${s}.sessions WHERE tenant_id = $1 AND nonce_hash = $2`,
    purgeSessions:
      `DELETE FROM ${s}.sessions WHERE (tenant_id, id) IN ` +
      `(SELECT tenant_id, id FROM ${s}.sessions WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  });
}

const toKey = (row: Row): ApplicationKeyRecord => ({
  id: row['id'] as string,
  tenantId: row['tenant_id'] as string,
  applicationId: row['application_id'] as string,
  keyHash: row['key_hash'] as string,
  keyLookup: row['key_lookup'] as string,
  createdBy: row['created_by'] as string | null,
  createdAt: row['created_at'] as number,
  grants: (row['grants'] ?? null) as SessionGrants | null,
});

const toSession = (row: Row): SessionRecord => ({
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
  grants: (row['grants'] as SessionGrants | null) ?? null,
  authorizerGeneration: row['authorizer_generation'] as number | null,
});

/**
 * Application keys and sessions of the PostgreSQL store (see the Store interface for each
 * guarantee). Key changes of one application lock its row first, so they queue across instances.
 */
export class PostgresCredentials {
  readonly #db: PgExecutor;
  readonly #sql: ReturnType<typeof statements>;

  constructor(db: PgExecutor, s: string) {
    this.#db = db;
    this.#sql = statements(s);
  }

  /** Inserts a key row on `db` (a transaction's connection when the caller has one). */
  async insertKey(db: Queryable, key: ApplicationKeyRecord): Promise<void> {
    await db.query(this.#sql.insertKey, [
      key.tenantId,
      key.applicationId,
      key.id,
      key.keyHash,
      key.keyLookup,
      key.createdBy ?? null,
      key.createdAt,
      key.grants == null ? null : JSON.stringify(key.grants),
    ]);
  }

  async findApplicationKeys(keyLookup: string): Promise<ApplicationKeyMatch[]> {
    const { rows } = await this.#db.query(this.#sql.findKeys, [keyLookup]);
    return rows.map((row) => ({
      key: {
        id: row['key_id'] as string,
        tenantId: row['tenant_id'] as string,
        applicationId: row['id'] as string,
        keyHash: row['key_hash'] as string,
        keyLookup: row['key_lookup'] as string,
        createdBy: row['key_created_by'] as string | null,
        createdAt: row['key_created_at'] as number,
        grants: (row['key_grants'] ?? null) as SessionGrants | null,
      },
      application: toApplication(row),
    }));
  }

  createApplicationKey(key: ApplicationKeyRecord, max: number): Promise<'created' | 'not_found' | 'limit'> {
    return this.#db.transaction(async (tx) => {
      if ((await tx.query(this.#sql.lockApplication, [key.tenantId, key.applicationId])).rows.length === 0) return 'not_found';
      if ((await this.#count(tx, key.tenantId, key.applicationId)) >= max) return 'limit';
      await this.insertKey(tx, key);
      return 'created';
    });
  }

  async listApplicationKeys(tenantId: string, applicationId: string): Promise<ApplicationKeyRecord[]> {
    return (await this.#db.query(this.#sql.listKeys, [tenantId, applicationId])).rows.map(toKey);
  }

  async getApplicationKey(tenantId: string, applicationId: string, keyId: string): Promise<ApplicationKeyRecord | null> {
    const { rows } = await this.#db.query(this.#sql.getKey, [tenantId, applicationId, keyId]);
    return rows.length === 0 ? null : toKey(rows[0]!);
  }

  deleteApplicationKey(tenantId: string, applicationId: string, keyId: string): Promise<'deleted' | 'not_found' | 'last_key'> {
    return this.#db.transaction(async (tx) => {
      if ((await tx.query(this.#sql.lockApplication, [tenantId, applicationId])).rows.length === 0) return 'not_found';
      if ((await tx.query(this.#sql.getKey, [tenantId, applicationId, keyId])).rows.length === 0) return 'not_found';
      if ((await this.#count(tx, tenantId, applicationId)) <= 1) return 'last_key';
      await tx.query(this.#sql.deleteKey, [tenantId, applicationId, keyId]);
      await tx.query(this.#sql.nextGeneration, [tenantId, applicationId]);
      return 'deleted';
    });
  }

  replaceApplicationKeys(key: ApplicationKeyRecord, modifiedBy: string): Promise<boolean> {
    return this.#db.transaction(async (tx) => {
      const stamped = await tx.query(this.#sql.stampApplication, [modifiedBy, key.createdAt, key.tenantId, key.applicationId]);
      if (stamped.rowCount !== 1) return false;
      await tx.query(this.#sql.deleteKeys, [key.tenantId, key.applicationId]);
      await this.insertKey(tx, key);
      return true;
    });
  }

  async createSession(session: SessionRecord): Promise<Inserted> {
    const result = await this.#db.query(this.#sql.insertSession, [
      session.tenantId,
      session.id,
      session.applicationId,
      session.keyHash,
      session.keyLookup,
      session.nonceHash,
      session.createdAt,
      session.expiresAt,
      session.authorizedBy,
      session.authorizedAt,
      session.grants === null ? null : JSON.stringify(session.grants),
      session.creatorGeneration ?? 0,
      session.authorizerGeneration ?? null,
    ]);
    return result.rowCount === 0 ? 'exists' : 'created';
  }

  async findSessions(keyLookup: string): Promise<SessionRecord[]> {
    return (await this.#db.query(this.#sql.findSessions, [keyLookup])).rows.map(toSession);
  }

  /** One conditional UPDATE: a racing second authorization waits for the row and then no longer matches it. */
  async authorizeSession(tenantId: string, nonceHash: string, authorization: SessionAuthorization, now: number): Promise<AuthorizeSessionResult> {
    const updated = await this.#db.query(this.#sql.authorizeSession, [
      authorization.authorizedBy,
      authorization.authorizedAt,
      JSON.stringify(authorization.grants),
      authorization.authorizerGeneration,
      authorization.expiresAt ?? Number.MAX_SAFE_INTEGER,
      tenantId,
      nonceHash,
      now,
    ]);
    if (updated.rows.length === 1) return { status: 'authorized', session: toSession(updated.rows[0]!) };
    const { rows } = await this.#db.query(this.#sql.sessionByNonce, [tenantId, nonceHash]);
    if (rows.length === 0 || (rows[0]!['expires_at'] as number) <= now) return { status: 'not_found' };
    return { status: 'already_authorized' };
  }

  async purgeExpiredSessions(now: number, limit: number): Promise<number> {
    return (await this.#db.query(this.#sql.purgeSessions, [now, limit])).rowCount ?? 0;
  }

  async #count(tx: Queryable, tenantId: string, applicationId: string): Promise<number> {
    return (await tx.query(this.#sql.countKeys, [tenantId, applicationId])).rows[0]!['n'] as number;
  }
}
