import type { ApplicationKeyMatch, ApplicationKeyRecord, AuthorizeSessionResult, SessionAuthorization, SessionGrants, SessionRecord, Inserted } from '../store.js';
import { APPLICATION_COLUMNS, type ApplicationRow, toApplication } from './record-rows.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import type { StatementCache } from './statement-cache.js';

const KEY_COLUMNS = 'k.tenant_id, k.application_id, k.id, k.key_hash, k.key_lookup, k.created_by, k.created_at, k.grants';
const SESSION_COLUMNS =
  'tenant_id, id, application_id, key_hash, key_lookup, nonce_hash, created_at, expires_at, authorized_by, authorized_at, grants, creator_generation, authorizer_generation';

const SQL = {
  insertKey: 'INSERT INTO application_keys (tenant_id, application_id, id, key_hash, key_lookup, created_by, created_at, grants) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  findKeys:
    `SELECT k.id AS key_id, k.key_hash, k.key_lookup, k.created_by AS key_created_by, k.created_at AS key_created_at, k.grants AS key_grants, ${APPLICATION_COLUMNS} FROM application_keys k ` +
    'JOIN applications t ON t.tenant_id = k.tenant_id AND t.id = k.application_id WHERE k.key_lookup = ?',
  applicationExists: 'SELECT 1 AS found FROM applications WHERE tenant_id = ? AND id = ?',
  countKeys: 'SELECT count(*) AS n FROM application_keys WHERE tenant_id = ? AND application_id = ?',
  listKeys: `SELECT ${KEY_COLUMNS} FROM application_keys k WHERE k.tenant_id = ? AND k.application_id = ? ORDER BY k.seq`,
  getKey: `SELECT ${KEY_COLUMNS} FROM application_keys k WHERE k.tenant_id = ? AND k.application_id = ? AND k.id = ?`,
  deleteKey: 'DELETE FROM application_keys WHERE tenant_id = ? AND application_id = ? AND id = ?',
  deleteKeys: 'DELETE FROM application_keys WHERE tenant_id = ? AND application_id = ?',
  /** In the statement, not read and written back: no change of credentials is lost to a race. */
  nextGeneration: 'UPDATE applications SET credentials_generation = credentials_generation + 1 WHERE tenant_id = ? AND id = ?',
  stampApplication: 'UPDATE applications SET modified_by = ?, modified_at = ?, credentials_generation = credentials_generation + 1 WHERE tenant_id = ? AND id = ?',

  insertSession: `INSERT INTO sessions (${SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  findSessions: `SELECT ${SESSION_COLUMNS} FROM sessions WHERE key_lookup = ?`,
  authorizeSession:
    'UPDATE sessions SET authorized_by = ?, authorized_at = ?, grants = ?, authorizer_generation = ?, expires_at = min(expires_at, ?) ' +
    'WHERE tenant_id = ? AND nonce_hash = ? AND authorized_by IS NULL AND expires_at > ?',
  sessionByNonce: `SELECT ${SESSION_COLUMNS} FROM sessions WHERE tenant_id = ? AND nonce_hash = ?`,
  purgeSessions: 'DELETE FROM sessions WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM sessions WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)',
} as const;

interface KeyRow {
  tenant_id: string;
  application_id: string;
  id: string;
  key_hash: string;
  key_lookup: string;
  created_by: string | null;
  created_at: number;
  grants: string | null;
}

/** The key's columns of a key lookup (aliased where the application has a column of that name). */
interface KeyMatchRow {
  key_id: string;
  key_hash: string;
  key_lookup: string;
  key_created_by: string | null;
  key_created_at: number;
  key_grants: string | null;
}

interface SessionRow {
  tenant_id: string;
  id: string;
  application_id: string;
  key_hash: string;
  key_lookup: string;
  nonce_hash: string;
  created_at: number;
  expires_at: number;
  authorized_by: string | null;
  authorized_at: number | null;
  grants: string | null;
  creator_generation: number;
  authorizer_generation: number | null;
}

const toKey = (row: KeyRow): ApplicationKeyRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  applicationId: row.application_id,
  keyHash: row.key_hash,
  keyLookup: row.key_lookup,
  createdBy: row.created_by,
  createdAt: row.created_at,
  grants: row.grants === null ? null : (JSON.parse(row.grants) as SessionGrants),
});

const toSession = (row: SessionRow): SessionRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  applicationId: row.application_id,
  creatorGeneration: row.creator_generation,
  keyHash: row.key_hash,
  keyLookup: row.key_lookup,
  nonceHash: row.nonce_hash,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  authorizedBy: row.authorized_by,
  authorizedAt: row.authorized_at,
  grants: row.grants === null ? null : (JSON.parse(row.grants) as SessionGrants),
  authorizerGeneration: row.authorizer_generation,
});

/**
 * Application keys and sessions of the SQLite store (see the Store interface for each guarantee).
 * Check-then-write methods run in BEGIN IMMEDIATE transactions, so no other writer comes between.
 */
export class SqliteCredentials {
  #statements: StatementCache;
  #createKeyTx: SqliteTransaction<(key: ApplicationKeyRecord, max: number) => 'created' | 'not_found' | 'limit'>;
  #deleteKeyTx: SqliteTransaction<(tenantId: string, applicationId: string, keyId: string) => 'deleted' | 'not_found' | 'last_key'>;
  #replaceKeysTx: SqliteTransaction<(key: ApplicationKeyRecord, modifiedBy: string) => boolean>;

  constructor(db: BetterSqlite3Database, statements: StatementCache) {
    this.#statements = statements;
    this.#createKeyTx = db.transaction((key: ApplicationKeyRecord, max: number) => {
      if (!this.#exists(key.tenantId, key.applicationId)) return 'not_found';
      if (this.#count(key.tenantId, key.applicationId) >= max) return 'limit';
      this.insertKey(key);
      return 'created';
    });
    this.#deleteKeyTx = db.transaction((tenantId: string, applicationId: string, keyId: string) => {
      if (this.getApplicationKey(tenantId, applicationId, keyId) === null) return 'not_found';
      if (this.#count(tenantId, applicationId) <= 1) return 'last_key';
      this.#statements.get(SQL.deleteKey).run(tenantId, applicationId, keyId);
      this.#statements.get(SQL.nextGeneration).run(tenantId, applicationId);
      return 'deleted';
    });
    this.#replaceKeysTx = db.transaction((key: ApplicationKeyRecord, modifiedBy: string) => {
      const stamped = this.#statements.get(SQL.stampApplication).run(modifiedBy, key.createdAt, key.tenantId, key.applicationId);
      if (stamped.changes !== 1) return false;
      this.#statements.get(SQL.deleteKeys).run(key.tenantId, key.applicationId);
      this.insertKey(key);
      return true;
    });
  }

  /** Inserts a key row (inside the caller's transaction when there is one). */
  insertKey(key: ApplicationKeyRecord): void {
    this.#statements
      .get(SQL.insertKey)
      .run(key.tenantId, key.applicationId, key.id, key.keyHash, key.keyLookup, key.createdBy ?? null, key.createdAt, key.grants == null ? null : JSON.stringify(key.grants));
  }

  findApplicationKeys(keyLookup: string): ApplicationKeyMatch[] {
    const rows = this.#statements.get(SQL.findKeys).all(keyLookup) as (ApplicationRow & KeyMatchRow)[];
    return rows.map((row) => ({
      key: {
        id: row.key_id,
        tenantId: row.tenant_id,
        applicationId: row.id,
        keyHash: row.key_hash,
        keyLookup: row.key_lookup,
        createdBy: row.key_created_by,
        createdAt: row.key_created_at,
        grants: row.key_grants === null ? null : (JSON.parse(row.key_grants) as SessionGrants),
      },
      application: toApplication(row),
    }));
  }

  createApplicationKey(key: ApplicationKeyRecord, max: number): 'created' | 'not_found' | 'limit' {
    return this.#createKeyTx.immediate(key, max);
  }

  listApplicationKeys(tenantId: string, applicationId: string): ApplicationKeyRecord[] {
    return (this.#statements.get(SQL.listKeys).all(tenantId, applicationId) as KeyRow[]).map(toKey);
  }

  getApplicationKey(tenantId: string, applicationId: string, keyId: string): ApplicationKeyRecord | null {
    const row = this.#statements.get(SQL.getKey).get(tenantId, applicationId, keyId) as KeyRow | undefined;
    return row === undefined ? null : toKey(row);
  }

  deleteApplicationKey(tenantId: string, applicationId: string, keyId: string): 'deleted' | 'not_found' | 'last_key' {
    return this.#deleteKeyTx.immediate(tenantId, applicationId, keyId);
  }

  replaceApplicationKeys(key: ApplicationKeyRecord, modifiedBy: string): boolean {
    return this.#replaceKeysTx.immediate(key, modifiedBy);
  }

  /** 'exists' (nothing written) when the id or the tenant's nonce hash is taken. */
  createSession(session: SessionRecord): Inserted {
    try {
      this.#insertSession(session);
      return 'created';
    } catch (error) {
      if ((error as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) return 'exists';
      throw error;
    }
  }

  #insertSession(session: SessionRecord): void {
    this.#statements
      .get(SQL.insertSession)
      .run(
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
      );
  }

  findSessions(keyLookup: string): SessionRecord[] {
    return (this.#statements.get(SQL.findSessions).all(keyLookup) as SessionRow[]).map(toSession);
  }

  /** One conditional UPDATE: of racing authorizations only one matches the pending row. */
  authorizeSession(tenantId: string, nonceHash: string, authorization: SessionAuthorization, now: number): AuthorizeSessionResult {
    const result = this.#statements
      .get(SQL.authorizeSession)
      .run(
        authorization.authorizedBy,
        authorization.authorizedAt,
        JSON.stringify(authorization.grants),
        authorization.authorizerGeneration,
        authorization.expiresAt ?? Number.MAX_SAFE_INTEGER,
        tenantId,
        nonceHash,
        now,
      );
    const row = this.#statements.get(SQL.sessionByNonce).get(tenantId, nonceHash) as SessionRow | undefined;
    if (result.changes === 1 && row !== undefined) return { status: 'authorized', session: toSession(row) };
    if (row === undefined || row.expires_at <= now) return { status: 'not_found' };
    return { status: 'already_authorized' };
  }

  purgeExpiredSessions(now: number, limit: number): number {
    return this.#statements.get(SQL.purgeSessions).run(now, limit).changes;
  }

  #exists(tenantId: string, applicationId: string): boolean {
    return this.#statements.get(SQL.applicationExists).get(tenantId, applicationId) !== undefined;
  }

  #count(tenantId: string, applicationId: string): number {
    return (this.#statements.get(SQL.countKeys).get(tenantId, applicationId) as { n: number }).n;
  }
}
