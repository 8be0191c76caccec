import type {
  ContainerScope,
  AuditEntry,
  CreateTokenResult,
  CreateTokensResult,
  ExpiredTokenRecord,
  PageRequest,
  PageResult,
  StoredToken,
  TokenFilter,
  UpdateTokenResult,
} from '../store.js';
import { insertAudit } from './audit-sql.js';
import { runPage } from './paging.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import { GroupCommit } from './group-commit.js';
import type { StatementCache } from './statement-cache.js';
import { mutableTokenValues, tokenFromRow, tokenFromValues } from './token-rows.js';
import { metadataPairs, toStoredToken } from '../areas/token-rows.js';
import type { Row } from '../sql/operation.js';
import { sqliteDialect } from '../sql/dialect.js';
import { KeyVersionWalk } from '../areas/key-version-walk.js';
import { TOKENS_SQL } from '../areas/tokens.js';
import { hashBytes, hashListText, nullableHashBytes } from '../token-bytes.js';
import {
  DELETE_METADATA,
  DELETE_SEARCH,
  DELETE_TOKEN,
  DELETED_ID_TAKEN,
  FIND_LIVE_DUPLICATE,
  GET_LIVE_TOKEN,
  GET_LIVE_TOKEN_REF,
  INSERT_DELETED,
  INSERT_METADATA,
  INSERT_SEARCH,
  INSERT_TOKEN,
  LIST_EXPIRED,
  INSERT_TENANT_KEY,
  TENANT_KEY_OF,
  UPDATE_TOKEN,
  tokenListQuery,
} from './token-sql.js';
import { checkLimit } from '../limit.js';
import { scopesParam } from '../token-values.js';

const BELOW_KEY_VERSION = TOKENS_SQL.belowKeyVersion.render(sqliteDialect);

/** Actor of the expiry sweep, on its reference records and audit entries. */
export const EXPIRY_ACTOR = 'system:expiry';
/** Operation of the expiry sweep's audit entries: a deletion, attributed to EXPIRY_ACTOR. */
export const EXPIRY_OPERATION = 'token:delete';

const CREATED: CreateTokenResult = Object.freeze({ status: 'created' });
const ID_CONFLICT: CreateTokenResult = Object.freeze({ status: 'id_conflict' });
const UPDATED: UpdateTokenResult = Object.freeze({ status: 'updated' });
const NOT_FOUND: UpdateTokenResult = Object.freeze({ status: 'not_found' });

/** Ends a createMany transaction (rolling it back) at the item whose id is taken. */
class IdConflictAt extends Error {
  constructor(readonly index: number) {
    super(`id conflict at item ${index}`);
  }
}

/**
 * The token operations of the SQLite store. Every write is one BEGIN IMMEDIATE transaction (the
 * write lock is taken before the first read, so a check and the write that depends on it cannot
 * interleave with another connection's), and every statement is prepared once.
 */
export class SqliteTokens {
  #statements: StatementCache;
  #read: <R>(fn: () => R) => R;
  #createTx: SqliteTransaction<(token: StoredToken, now: number, scopes: string | null) => CreateTokenResult>;
  #createManyTx: SqliteTransaction<(items: CreateItem[]) => CreateTokenResult[]>;
  #creates: GroupCommit<CreateItem, CreateTokenResult>;
  #createAllTx: SqliteTransaction<(tokens: readonly StoredToken[], now: number, scopes: string | null) => CreateTokenResult[]>;
  #updateTx: SqliteTransaction<(next: StoredToken, audit: AuditEntry, now: number, scopes: string | null) => UpdateTokenResult>;
  #deleteTx: SqliteTransaction<(tenantId: string, id: string, deletedBy: string, audit: AuditEntry, now: number) => boolean>;
  #purgeTx: SqliteTransaction<(now: number, limit: number) => ExpiredTokenRecord[]>;
  #keyVersionWalk = new KeyVersionWalk();
  /** Tenant id → its integer key (tenant_keys), which never changes once committed. */
  #tenantKeys = new Map<string, number>();
  #db: BetterSqlite3Database;

  constructor(db: BetterSqlite3Database, statements: StatementCache, read: <R>(fn: () => R) => R) {
    this.#statements = statements;
    this.#db = db;
    this.#read = read;
    this.#createTx = db.transaction(this.#create);
    this.#createManyTx = db.transaction((items: CreateItem[]) => items.map((item) => this.#create(item.token, item.now, item.scopes)));
    this.#creates = new GroupCommit(
      ({ token, now, scopes }) => this.#createTx.immediate(token, now, scopes),
      (items) => this.#createManyTx.immediate(items),
    );
    this.#createAllTx = db.transaction((tokens: readonly StoredToken[], now: number, scopes: string | null) =>
      tokens.map((token, index) => {
        const result = this.#create(token, now, scopes);
        // Thrown to roll the whole call back; caught in createMany.
        if (result.status === 'id_conflict') throw new IdConflictAt(index);
        return result;
      }),
    );
    this.#updateTx = db.transaction(this.#update);
    this.#deleteTx = db.transaction(this.#delete);
    this.#purgeTx = db.transaction(this.#purge);
  }

  /** Group-committed (group-commit.ts): settles once the turn's batch has committed. */
  createToken(token: StoredToken, now: number, dedupeWithin?: readonly ContainerScope[]): Promise<CreateTokenResult> {
    return this.#creates.submit({ token, now, scopes: scopesParam(dedupeWithin) });
  }

  /** See Store.createTokens: one BEGIN IMMEDIATE transaction, rolled back at the first id conflict. */
  createTokens(tokens: readonly StoredToken[], now: number, dedupeWithin?: readonly ContainerScope[]): CreateTokensResult {
    try {
      return { status: 'created', results: this.#createAllTx.immediate(tokens, now, scopesParam(dedupeWithin)) };
    } catch (error) {
      if (error instanceof IdConflictAt) return { status: 'id_conflict', index: error.index };
      throw error;
    }
  }

  /**
   * Creates a token as `create` does, inside a transaction the caller holds (token-intent
   * conversion: the intent's removal and the token's creation are one transaction).
   */
  createInTransaction(token: StoredToken, now: number, dedupeWithin?: readonly ContainerScope[]): CreateTokenResult {
    return this.#create(token, now, scopesParam(dedupeWithin));
  }

  /** Writes creations still waiting for the end of the turn. */
  flush(): void {
    this.#creates.flush();
  }

  getToken(tenantId: string, id: string, now: number): StoredToken | null {
    const tenant = this.#tenantKey(tenantId);
    if (tenant === null) return null;
    const values = this.#statements.values(GET_LIVE_TOKEN).get(tenant, id, now) as unknown[] | undefined;
    return values === undefined ? null : tokenFromValues(tenantId, id, values);
  }

  listTokens(tenantId: string, filter: TokenFilter, page: PageRequest, now: number): PageResult<StoredToken> {
    // An unknown tenant has no tokens: its key -1 matches no row (and the page is still checked).
    const tenant = this.#tenantKey(tenantId) ?? -1;
    return runPage(this.#statements, this.#read, tokenListQuery(tenant, filter ?? {}, now), page, (row) => tokenFromRow(tenantId, row));
  }

  updateToken(next: StoredToken, audit: AuditEntry, now: number, dedupeWithin?: readonly ContainerScope[]): UpdateTokenResult {
    return this.#updateTx.immediate(next, audit, now, scopesParam(dedupeWithin));
  }

  deleteToken(tenantId: string, id: string, deletedBy: string, audit: AuditEntry, now: number): boolean {
    return this.#deleteTx.immediate(tenantId, id, deletedBy, audit, now);
  }

  purgeExpiredTokens(now: number, limit: number): ExpiredTokenRecord[] {
    return this.#purgeTx.immediate(now, checkLimit(limit));
  }

  /** In seq order, resuming where this instance's previous walk for the tenant and version began (KeyVersionWalk). */
  listTokensBelowKeyVersion(tenantId: string, version: number, limit: number): StoredToken[] {
    const from = this.#keyVersionWalk.start(tenantId, version, limit);
    const walk = (start: number) => this.#statements.get(BELOW_KEY_VERSION.text).all(...BELOW_KEY_VERSION.bind([tenantId, version, start, limit])) as Row[];
    let rows = walk(from);
    if (rows.length === 0 && from > 0) rows = walk(0);
    this.#keyVersionWalk.found(tenantId, version, rows);
    return rows.map((row) => toStoredToken(row, tenantId));
  }

  /**
   * The tenant's integer key, or null when it has none yet (it never had a token). Remembered only
   * when read outside a transaction: one read inside may be the key an uncommitted write just gave,
   * which a rollback would free for another tenant.
   */
  #tenantKey(tenantId: string): number | null {
    const known = this.#tenantKeys.get(tenantId);
    if (known !== undefined) return known;
    const row = this.#statements.get(TENANT_KEY_OF).get(tenantId) as { key: number } | undefined;
    if (row === undefined) return null;
    if (!this.#db.inTransaction) this.#tenantKeys.set(tenantId, row.key);
    return row.key;
  }

  /** The tenant's integer key for a write (inside its transaction), given now when it has none. */
  #writeTenantKey(tenantId: string): number {
    return this.#tenantKey(tenantId) ?? Number(this.#statements.get(INSERT_TENANT_KEY).run(tenantId).lastInsertRowid);
  }

  #create = (token: StoredToken, now: number, scopes: string | null): CreateTokenResult => {
    const statements = this.#statements;
    const tenant = this.#writeTenantKey(token.tenantId);
    if (probesDuplicate(token)) {
      const row = statements.values(FIND_LIVE_DUPLICATE).get(tenant, hashBytes(token.fingerprint!), token.type, now, 0, scopes, scopes) as unknown[] | undefined;
      if (row !== undefined) return { status: 'duplicate', existing: tokenFromRow(token.tenantId, row) };
    }
    const seq = this.#insert(tenant, token);
    if (seq === null) return ID_CONFLICT;
    this.#insertIndexRows(tenant, seq, token.metadata, token.searchHashes);
    return CREATED;
  };

  /** Inserts the token row only (inside the create transaction); its seq, or null when the id is taken. */
  #insert(tenant: number, token: StoredToken): number | null {
    const statements = this.#statements;
    if (statements.get(DELETED_ID_TAKEN).get(tenant, token.id) !== undefined) return null;
    const inserted = statements.get(INSERT_TOKEN).run(tenant, token.id, ...mutableTokenValues(token), token.createdBy, token.createdAt);
    // Nothing inserted: the id is held by a token (live or expired-but-unswept).
    return inserted.changes === 0 ? null : Number(inserted.lastInsertRowid);
  }

  #update = (next: StoredToken, audit: AuditEntry, now: number, scopes: string | null): UpdateTokenResult => {
    const statements = this.#statements;
    const tenant = this.#tenantKey(next.tenantId);
    const current = tenant === null ? undefined : (statements.get(GET_LIVE_TOKEN_REF).get(tenant, next.id, now) as TokenRef | undefined);
    if (tenant === null || current === undefined) return NOT_FOUND;
    const fingerprint = nullableHashBytes(next.fingerprint);
    const sameFingerprint = fingerprint === null ? current.fingerprint === null : current.fingerprint !== null && fingerprint.equals(current.fingerprint);
    if (probesDuplicate(next) && (!sameFingerprint || (current.flags & 1) !== 1)) {
      const row = statements.values(FIND_LIVE_DUPLICATE).get(tenant, fingerprint, next.type, now, current.seq, scopes, scopes) as unknown[] | undefined;
      if (row !== undefined) return { status: 'duplicate', existing: tokenFromRow(next.tenantId, row) };
    }
    statements.get(UPDATE_TOKEN).run(...mutableTokenValues(next), current.seq);
    this.#deleteIndexRows(tenant, current);
    this.#insertIndexRows(tenant, current.seq, next.metadata, next.searchHashes);
    insertAudit(statements, audit);
    return UPDATED;
  };

  #delete = (tenantId: string, id: string, deletedBy: string, audit: AuditEntry, now: number): boolean => {
    const tenant = this.#tenantKey(tenantId);
    const current = tenant === null ? undefined : (this.#statements.get(GET_LIVE_TOKEN_REF).get(tenant, id, now) as TokenRef | undefined);
    if (tenant === null || current === undefined) return false;
    this.#remove(tenant, current, id, deletedBy, now);
    insertAudit(this.#statements, audit);
    return true;
  };

  #purge = (now: number, limit: number): ExpiredTokenRecord[] => {
    const rows = this.#statements.get(LIST_EXPIRED).all(now, limit) as (TokenRef & { tenant: number; tenant_id: string; id: string; expires_at: number })[];
    for (const row of rows) {
      this.#remove(row.tenant, row, row.id, EXPIRY_ACTOR, now);
      insertAudit(this.#statements, {
        tenantId: row.tenant_id,
        actor: EXPIRY_ACTOR,
        operation: EXPIRY_OPERATION,
        resourceId: row.id,
        outcome: 'success',
        detail: null,
        at: now,
      });
    }
    return rows.map((row) => ({ tenantId: row.tenant_id, id: row.id, type: row.type, expiresAt: row.expires_at }));
  };

  /** Removes the token and its index rows (explicitly: not relying on the connection's foreign_keys), leaving the reference. */
  #remove(tenant: number, current: TokenRef, id: string, deletedBy: string, now: number): void {
    const statements = this.#statements;
    this.#deleteIndexRows(tenant, current);
    statements.get(DELETE_TOKEN).run(current.seq);
    statements.get(INSERT_DELETED).run(tenant, id, current.type, now, deletedBy);
  }

  /** Removes a token's metadata and search rows by their keys, which its row lists. */
  #deleteIndexRows(tenant: number, current: TokenRef): void {
    const statements = this.#statements;
    if (current.metadata !== null) {
      const remove = statements.get(DELETE_METADATA);
      for (const [key, value] of metadataPairs(JSON.parse(current.metadata) as Record<string, string>)) remove.run(tenant, key, value, current.seq);
    }
    if (current.search_hashes !== null) {
      const remove = statements.get(DELETE_SEARCH);
      for (const hash of hashListText(current.search_hashes)) remove.run(tenant, hashBytes(hash), current.seq);
    }
  }

  #insertIndexRows(tenant: number, seq: number, metadata: Record<string, string> | null | undefined, hashes: readonly string[] | null | undefined): void {
    const statements = this.#statements;
    if (metadata != null) {
      const pairs = metadataPairs(metadata);
      if (pairs.length > 0) {
        const insert = statements.get(INSERT_METADATA);
        for (const [key, value] of pairs) insert.run(tenant, key, value, seq);
      }
    }
    if (hashes != null && hashes.length > 0) {
      const insert = statements.get(INSERT_SEARCH);
      for (const hash of hashes) insert.run(tenant, hashBytes(hash), seq);
    }
  }
}

/** What GET_LIVE_TOKEN_REF reads of the current token. */
interface TokenRef {
  seq: number;
  type: string;
  fingerprint: Buffer | null;
  flags: number;
  metadata: string | null;
  search_hashes: Buffer | null;
}

interface CreateItem {
  token: StoredToken;
  now: number;
  /** The deduplication scopes as FIND_LIVE_DUPLICATE binds them. */
  scopes: string | null;
}

/** A write with deduplication looks for another live token of the same type and fingerprint first. */
function probesDuplicate(token: StoredToken): boolean {
  return token.deduplicate && token.fingerprint != null;
}
