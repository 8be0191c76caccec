import type { ContainerScope, ConvertTokenIntentResult, Inserted, StoredToken, StoredTokenIntent } from '../store.js';
import { checkLimit } from '../limit.js';
import type { PgExecutor } from './pg-executor.js';
import type { PostgresTokens } from './postgres-tokens.js';

/** Ends a conversion transaction (rolling the intent's removal back) when the token's id is taken. */
class TokenIdTaken extends Error {}

const COLUMNS = 'tenant_id, id, type, sealed, fingerprint, created_by, created_at, expires_at';

/**
 * Token intents of the PostgreSQL store. A conversion is one transaction: its DELETE of the intent
 * row locks it, so a concurrent conversion of the same intent waits, then finds it gone (READ
 * COMMITTED re-checks the row) and answers not_found; an id conflict rolls the removal back.
 */
export class PostgresTokenIntents {
  readonly #db: PgExecutor;
  readonly #tokens: PostgresTokens;
  readonly #sql: Readonly<Record<'insert' | 'getLive' | 'deleteLive' | 'purgeExpired', string>>;

  constructor(db: PgExecutor, quotedSchema: string, tokens: PostgresTokens) {
    this.#db = db;
    this.#tokens = tokens;
    const table = `${quotedSchema}.token_intents`;
    this.#sql = Object.freeze({
      insert: `INSERT INTO ${table} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
      getLive: `SELECT ${COLUMNS} FROM ${table} WHERE tenant_id = $1 AND id = $2 AND expires_at > $3`,
      deleteLive: `DELETE FROM ${table} WHERE tenant_id = $1 AND id = $2 AND expires_at > $3`,
      purgeExpired:
        `DELETE FROM ${table} WHERE (tenant_id, id) IN ` + `(SELECT tenant_id, id FROM ${table} WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    });
  }

  async createTokenIntent(intent: StoredTokenIntent): Promise<Inserted> {
    const { tenantId, id, type, sealed, fingerprint, createdBy, createdAt, expiresAt } = intent;
    const result = await this.#db.query(this.#sql.insert, [tenantId, id, type, sealed, fingerprint, createdBy, createdAt, expiresAt]);
    return result.rowCount === 0 ? 'exists' : 'created';
  }

  async getTokenIntent(tenantId: string, id: string, now: number): Promise<StoredTokenIntent | null> {
    const { rows } = await this.#db.query(this.#sql.getLive, [tenantId, id, now]);
    const row = rows[0];
    if (row === undefined) return null;
    return {
      tenantId: row['tenant_id'] as string,
      id: row['id'] as string,
      type: row['type'] as string,
      sealed: row['sealed'] as Uint8Array,
      fingerprint: row['fingerprint'] as string | null,
      createdBy: row['created_by'] as string,
      createdAt: row['created_at'] as number,
      expiresAt: row['expires_at'] as number,
    };
  }

  async deleteTokenIntent(tenantId: string, id: string, now: number): Promise<boolean> {
    return (await this.#db.query(this.#sql.deleteLive, [tenantId, id, now])).rowCount === 1;
  }

  async convertTokenIntent(intentId: string, token: StoredToken, now: number, dedupeWithin?: readonly ContainerScope[]): Promise<ConvertTokenIntentResult> {
    try {
      return await this.#db.transaction(async (tx): Promise<ConvertTokenIntentResult> => {
        if ((await tx.query(this.#sql.deleteLive, [token.tenantId, intentId, now])).rowCount !== 1) return { status: 'not_found' };
        const result = await this.#tokens.createInTransaction(tx, token, now, dedupeWithin);
        if (result.status === 'id_conflict') throw new TokenIdTaken();
        return result;
      });
    } catch (error) {
      if (error instanceof TokenIdTaken) return { status: 'id_conflict' };
      throw error;
    }
  }

  async purgeExpiredTokenIntents(now: number, limit: number): Promise<number> {
    return (await this.#db.query(this.#sql.purgeExpired, [now, checkLimit(limit)])).rowCount ?? 0;
  }
}
