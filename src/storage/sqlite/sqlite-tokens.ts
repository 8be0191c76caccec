import type {
  ContainerScope,
  AuditEntry,
  CreateTokenResult,
  CreateTokensResult,
  DeletedTokenRecord,
  ExpiredTokenRecord,
  PageRequest,
  PageResult,
  CvcCursor,
  StoredToken,
  TokenFilter,
  UpdateTokenResult,
} from '../store.js';
import { insertAudit } from './audit-sql.js';
import { runPage } from './paging.js';
import { toDeletedToken, type DeletedTokenRow } from './record-rows.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import { GroupCommit } from './group-commit.js';
import type { StatementCache } from './statement-cache.js';
import { metadataPairs, mutableTokenValues, toStoredToken, tokenFromValues, type TokenRow } from './token-rows.js';
import {
  COUNT_BELOW_KEY_VERSION,
  DELETE_METADATA,
  DELETE_SEARCH,
  DELETE_TOKEN,
  DELETED_ID_TAKEN,
  FIND_LIVE_DUPLICATE,
  GET_DELETED,
  GET_LIVE_TOKEN,
  GET_LIVE_TOKEN_REF,
  INSERT_DELETED,
  INSERT_METADATA,
  INSERT_SEARCH,
  INSERT_TOKEN,
  LIST_BELOW_KEY_VERSION,
  LIST_CVC_DUE,
  LIST_CVC_DUE_AFTER,
  LIST_EXPIRED,
  REPLACE_CIPHERTEXT,
  UPDATE_TOKEN,
  tokenListQuery,
} from './token-sql.js';
import { checkLimit } from '../limit.js';
import { scopesParam } from '../token-values.js';

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
  /** (tenant, version) → the lowest seq that may still be below that version. */
  #keyScanHints = new Map<string, number>();

  constructor(db: BetterSqlite3Database, statements: StatementCache, read: <R>(fn: () => R) => R) {
    this.#statements = statements;
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
    const values = this.#statements.values(GET_LIVE_TOKEN).get(tenantId, id, now) as unknown[] | undefined;
    return values === undefined ? null : tokenFromValues(tenantId, id, values);
  }

  listTokens(tenantId: string, filter: TokenFilter, page: PageRequest, now: number): PageResult<StoredToken> {
    return runPage(this.#statements, this.#read, tokenListQuery(tenantId, filter ?? {}, now), page, toStoredToken);
  }

  updateToken(next: StoredToken, audit: AuditEntry, now: number, dedupeWithin?: readonly ContainerScope[]): UpdateTokenResult {
    return this.#updateTx.immediate(next, audit, now, scopesParam(dedupeWithin));
  }

  deleteToken(tenantId: string, id: string, deletedBy: string, audit: AuditEntry, now: number): boolean {
    return this.#deleteTx.immediate(tenantId, id, deletedBy, audit, now);
  }

  getDeletedToken(tenantId: string, id: string): DeletedTokenRecord | null {
    const row = this.#statements.get(GET_DELETED).get(tenantId, id) as DeletedTokenRow | undefined;
    return row === undefined ? null : toDeletedToken(row);
  }

  purgeExpiredTokens(now: number, limit: number): ExpiredTokenRecord[] {
    return this.#purgeTx.immediate(now, checkLimit(limit));
  }

  listCvcDue(now: number, limit: number, after?: CvcCursor): StoredToken[] {
    const rows = after
      ? this.#statements.get(LIST_CVC_DUE_AFTER).all(now, after.cvcPurgeAt, after.cvcPurgeAt, after.tenantId, after.id, checkLimit(limit))
      : this.#statements.get(LIST_CVC_DUE).all(now, checkLimit(limit));
    return (rows as TokenRow[]).map(toStoredToken);
  }

  replaceCiphertext(tenantId: string, id: string, expected: Uint8Array, next: { ciphertext: Uint8Array; keyVersion: number; cvcPurgeAt: number | null }): boolean {
    const result = this.#statements.get(REPLACE_CIPHERTEXT).run(next.ciphertext, next.keyVersion, next.cvcPurgeAt ?? null, tenantId, id, expected);
    return result.changes === 1;
  }

  /**
   * In seq order. There is no key_version index (it would cost every creation), so this walks the
   * table; to keep a re-encryption pass linear rather than quadratic (each batch would re-walk the
   * tokens already re-encrypted) it resumes from where the previous call for the same tenant and
   * version found its first token. Sound because a token's key version never goes down: every write
   * encrypts under the tenant's newest key, so a token once seen at or above `version` stays there.
   */
  listTokensBelowKeyVersion(tenantId: string, version: number, limit: number): StoredToken[] {
    const hintKey = JSON.stringify([tenantId, version]);
    const from = this.#keyScanHints.get(hintKey) ?? 0;
    const rows = this.#statements.get(LIST_BELOW_KEY_VERSION).all(tenantId, version, from, checkLimit(limit)) as TokenRow[];
    if (rows.length > 0) this.#keyScanHints.set(hintKey, rows[0]!.seq);
    return rows.map(toStoredToken);
  }

  countTokensBelowKeyVersion(tenantId: string, version: number): number {
    return (this.#statements.get(COUNT_BELOW_KEY_VERSION).get(tenantId, version) as { n: number }).n;
  }

  #create = (token: StoredToken, now: number, scopes: string | null): CreateTokenResult => {
    const statements = this.#statements;
    if (probesDuplicate(token)) {
      const row = statements.get(FIND_LIVE_DUPLICATE).get(token.tenantId, token.fingerprint, token.type, now, 0, scopes, scopes) as TokenRow | undefined;
      if (row !== undefined) return { status: 'duplicate', existing: toStoredToken(row) };
    }
    const seq = this.#insert(token);
    if (seq === null) return ID_CONFLICT;
    this.#insertIndexRows(seq, token);
    return CREATED;
  };

  /** Inserts the token row only (inside the create transaction); its seq, or null when the id is taken. */
  #insert(token: StoredToken): number | null {
    const statements = this.#statements;
    if (statements.get(DELETED_ID_TAKEN).get(token.tenantId, token.id) !== undefined) return null;
    const inserted = statements.get(INSERT_TOKEN).run(token.tenantId, token.id, ...mutableTokenValues(token), token.createdBy, token.createdAt);
    // Nothing inserted: the id is held by a token (live or expired-but-unswept).
    return inserted.changes === 0 ? null : Number(inserted.lastInsertRowid);
  }

  #update = (next: StoredToken, audit: AuditEntry, now: number, scopes: string | null): UpdateTokenResult => {
    const statements = this.#statements;
    const current = statements.get(GET_LIVE_TOKEN_REF).get(next.tenantId, next.id, now) as { seq: number; fingerprint: string | null; deduplicate: number } | undefined;
    if (current === undefined) return NOT_FOUND;
    if (probesDuplicate(next) && (current.fingerprint !== next.fingerprint || current.deduplicate !== 1)) {
      const row = statements.get(FIND_LIVE_DUPLICATE).get(next.tenantId, next.fingerprint, next.type, now, current.seq, scopes, scopes) as TokenRow | undefined;
      if (row !== undefined) return { status: 'duplicate', existing: toStoredToken(row) };
    }
    statements.get(UPDATE_TOKEN).run(...mutableTokenValues(next), current.seq);
    statements.get(DELETE_METADATA).run(current.seq);
    statements.get(DELETE_SEARCH).run(current.seq);
    this.#insertIndexRows(current.seq, next);
    insertAudit(statements, audit);
    return UPDATED;
  };

  #delete = (tenantId: string, id: string, deletedBy: string, audit: AuditEntry, now: number): boolean => {
    const current = this.#statements.get(GET_LIVE_TOKEN_REF).get(tenantId, id, now) as { seq: number; type: string } | undefined;
    if (current === undefined) return false;
    this.#remove(current.seq, tenantId, id, current.type, deletedBy, now);
    insertAudit(this.#statements, audit);
    return true;
  };

  #purge = (now: number, limit: number): ExpiredTokenRecord[] => {
    const rows = this.#statements.get(LIST_EXPIRED).all(now, limit) as { seq: number; tenant_id: string; id: string; type: string; expires_at: number }[];
    for (const row of rows) {
      this.#remove(row.seq, row.tenant_id, row.id, row.type, EXPIRY_ACTOR, now);
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
  #remove(seq: number, tenantId: string, id: string, type: string, deletedBy: string, now: number): void {
    const statements = this.#statements;
    statements.get(DELETE_METADATA).run(seq);
    statements.get(DELETE_SEARCH).run(seq);
    statements.get(DELETE_TOKEN).run(seq);
    statements.get(INSERT_DELETED).run(tenantId, id, type, now, deletedBy);
  }

  #insertIndexRows(seq: number, token: StoredToken): void {
    const statements = this.#statements;
    const metadata = token.metadata;
    if (metadata != null) {
      const pairs = metadataPairs(metadata);
      if (pairs.length > 0) {
        const insert = statements.get(INSERT_METADATA);
        for (const [key, value] of pairs) insert.run(seq, token.tenantId, key, value);
      }
    }
    const hashes = token.searchHashes;
    if (hashes != null && hashes.length > 0) {
      const insert = statements.get(INSERT_SEARCH);
      for (const hash of hashes) insert.run(seq, token.tenantId, hash);
    }
  }
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
