import type { ContainerScope, ConvertTokenIntentResult, CreateTokenResult, Inserted, StoredToken, StoredTokenIntent } from '../store.js';
import { checkLimit } from '../limit.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import type { StatementCache } from './statement-cache.js';

const SQL = {
  insert: 'INSERT INTO token_intents (tenant_id, id, type, sealed, fingerprint, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
  getLive: 'SELECT tenant_id, id, type, sealed, fingerprint, created_by, created_at, expires_at FROM token_intents WHERE tenant_id = ? AND id = ? AND expires_at > ?',
  deleteLive: 'DELETE FROM token_intents WHERE tenant_id = ? AND id = ? AND expires_at > ?',
  purgeExpired: 'DELETE FROM token_intents WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM token_intents WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)',
} as const;

interface IntentRow {
  tenant_id: string;
  id: string;
  type: string;
  sealed: Uint8Array;
  fingerprint: string | null;
  created_by: string;
  created_at: number;
  expires_at: number;
}

/** Ends a conversion transaction (rolling the intent's removal back) when the token's id is taken. */
class TokenIdTaken extends Error {}

/**
 * Token intents: a part of the SQLite store's synchronous core (see sqlite-boundary.ts). A
 * conversion is one BEGIN IMMEDIATE transaction: the intent's removal decides which of two
 * conversions creates the token, and an id conflict rolls the removal back.
 */
export class SqliteTokenIntents {
  #statements: StatementCache;
  #convertTx: SqliteTransaction<(intentId: string, token: StoredToken, now: number, within: readonly ContainerScope[] | undefined) => ConvertTokenIntentResult>;

  /** `createToken`: the token store's creation, run inside this part's transaction. */
  constructor(db: BetterSqlite3Database, statements: StatementCache, createToken: (token: StoredToken, now: number, within?: readonly ContainerScope[]) => CreateTokenResult) {
    this.#statements = statements;
    this.#convertTx = db.transaction((intentId: string, token: StoredToken, now: number, within: readonly ContainerScope[] | undefined): ConvertTokenIntentResult => {
      if (this.#statements.get(SQL.deleteLive).run(token.tenantId, intentId, now).changes === 0) return { status: 'not_found' };
      const result = createToken(token, now, within);
      if (result.status === 'id_conflict') throw new TokenIdTaken();
      return result;
    });
  }

  createTokenIntent(intent: StoredTokenIntent): Inserted {
    const { tenantId, id, type, sealed, fingerprint, createdBy, createdAt, expiresAt } = intent;
    return this.#statements.get(SQL.insert).run(tenantId, id, type, sealed, fingerprint, createdBy, createdAt, expiresAt).changes === 0 ? 'exists' : 'created';
  }

  getTokenIntent(tenantId: string, id: string, now: number): StoredTokenIntent | null {
    const row = this.#statements.get(SQL.getLive).get(tenantId, id, now) as IntentRow | undefined;
    return row === undefined ? null : toIntent(row);
  }

  deleteTokenIntent(tenantId: string, id: string, now: number): boolean {
    return this.#statements.get(SQL.deleteLive).run(tenantId, id, now).changes === 1;
  }

  convertTokenIntent(intentId: string, token: StoredToken, now: number, dedupeWithin?: readonly ContainerScope[]): ConvertTokenIntentResult {
    try {
      return this.#convertTx.immediate(intentId, token, now, dedupeWithin);
    } catch (error) {
      if (error instanceof TokenIdTaken) return { status: 'id_conflict' };
      throw error;
    }
  }

  purgeExpiredTokenIntents(now: number, limit: number): number {
    return this.#statements.get(SQL.purgeExpired).run(now, checkLimit(limit)).changes;
  }
}

function toIntent(row: IntentRow): StoredTokenIntent {
  return {
    tenantId: row.tenant_id,
    id: row.id,
    type: row.type,
    sealed: row.sealed,
    fingerprint: row.fingerprint,
    createdBy: row.created_by,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}
