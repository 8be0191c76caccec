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
import { runPage } from './paging.js';
import type { PgExecutor, Queryable } from './pg-executor.js';
import { MUTABLE_TOKEN_COLUMNS, mutableTokenValues } from './token-rows.js';
import { toStoredToken } from '../areas/token-rows.js';
import { KeyVersionWalk } from '../areas/key-version-walk.js';
import { TOKENS_SQL } from '../areas/tokens.js';
import { postgresDialect } from '../sql/dialect.js';
import { tokenListQuery, tokenStatements, type TokenStatements } from './token-sql.js';
import { TurnBatch } from './turn-batch.js';
import { ServiceUnavailableError } from '../../errors/errors.js';
import { checkLimit } from '../limit.js';
import { hashBytes, nullableHashText } from '../token-bytes.js';
import { scopesParam } from '../token-values.js';

/** Actor of the expiry sweep, on its reference records and audit entries (as in the SQLite store). */
export const EXPIRY_ACTOR = 'system:expiry';
/** Operation of the expiry sweep's audit entries: a deletion, attributed to EXPIRY_ACTOR. */
export const EXPIRY_OPERATION = 'token:delete';

/**
 * Advisory lock class of deduplicating writes; the second key hashes (schema, tenant, type,
 * fingerprint). Two writers of the same fingerprint serialize on it, so the second one's probe
 * runs after the first one's commit and finds its token. A hash collision only makes two unrelated
 * writers wait for each other.
 */
export const DEDUPE_LOCK_CLASS = 0x74760002;

/** Tenant keys kept in memory at most (one entry is an id and a number; past it the map starts over). */
const MAX_TENANT_KEYS = 100_000;

const CREATED: CreateTokenResult = Object.freeze({ status: 'created' });
const ID_CONFLICT: CreateTokenResult = Object.freeze({ status: 'id_conflict' });
const UPDATED: UpdateTokenResult = Object.freeze({ status: 'updated' });
const NOT_FOUND: UpdateTokenResult = Object.freeze({ status: 'not_found' });

const auditValues = (entry: AuditEntry) => [entry.tenantId, entry.actor, entry.operation, entry.resourceId ?? null, entry.outcome, entry.detail ?? null, entry.at];

/** Ends a createMany transaction (rolling it back) at the item whose id is taken. */
class IdConflictAt extends Error {
  constructor(readonly index: number) {
    super(`id conflict at item ${index}`);
  }
}

/** A write with deduplication looks for another live token of the same type and fingerprint first. */
const probesDuplicate = (token: StoredToken) => token.deduplicate === true && token.fingerprint != null;

/**
 * The token operations of the PostgreSQL store. Concurrency, per operation:
 * - create without deduplication is one statement: the primary key (tenant, id), which also holds
 *   deleted tokens' references (migration-lean-tokens.ts), decides conflicts;
 * - a deduplicating create or update takes the fingerprint's advisory lock, then probes and writes;
 * - update locks the token's row (FOR UPDATE) before replacing its index rows in a later statement,
 *   whose snapshot then includes whatever a concurrent writer of the same token committed;
 * - delete and purge are one statement each (purge claims rows with SKIP LOCKED);
 * - replaceCiphertext is a compare-and-set UPDATE: a concurrent writer's row fails its test.
 */
interface TokenLookup {
  tenantId: string;
  id: string;
  now: number;
}

export class PostgresTokens {
  readonly #db: PgExecutor;
  readonly #schema: string;
  readonly #quoted: string;
  readonly #sql: TokenStatements;
  readonly #keyVersionWalk = new KeyVersionWalk();
  readonly #belowKeyVersion: string;
  /** Tenants known to have a key in tenant_keys (a key, once given, is never removed). */
  readonly #keyed = new Set<string>();
  /** Tenant id → its integer key, for the lookup keys of lists by metadata and search. */
  readonly #tenantKeys = new Map<string, number>();

  constructor(db: PgExecutor, schema: string, quotedSchema: string) {
    this.#db = db;
    this.#schema = schema;
    this.#quoted = quotedSchema;
    this.#sql = tokenStatements(quotedSchema);
    this.#belowKeyVersion = TOKENS_SQL.belowKeyVersion.render(postgresDialect(quotedSchema)).text;
  }

  /**
   * Creations without deduplication of one event-loop turn go out as one statement, one commit
   * (turn-batch.ts), as the SQLite store's group commit writes them in one transaction; while one
   * such statement is in flight, the creations asked for meanwhile wait for it and go out together
   * after it, so under load one commit serves more of them. A batch that fails for any reason but
   * the connection is sent again one token at a time, so a bad token fails alone; a lost connection
   * fails them all with a 503, as it would each (the batch may have committed: see pg-executor.ts).
   */
  readonly #creates = new TurnBatch<StoredToken, boolean>(
    (token) => this.#insert(this.#db, token),
    (tokens) => this.#insertMany(tokens),
    { alone: (error) => !(error instanceof ServiceUnavailableError), maxInFlight: 1 },
  );

  async createToken(token: StoredToken, now: number, dedupeWithin?: readonly ContainerScope[]): Promise<CreateTokenResult> {
    if (!probesDuplicate(token)) return (await this.#creates.load(token)) ? CREATED : ID_CONFLICT;
    return this.#db.transaction(async (tx) => {
      await this.#lockFingerprint(tx, token);
      const duplicate = await this.#findDuplicate(tx, token, now, null, dedupeWithin);
      if (duplicate !== null) return { status: 'duplicate', existing: duplicate };
      return (await this.#insert(tx, token)) ? CREATED : ID_CONFLICT;
    });
  }

  /**
   * Creates a token as `createToken` does, inside the transaction `tx` (token-intent conversion: the
   * intent's removal and the token's creation are one transaction). Its lock order (the caller's
   * row locks, then the fingerprint lock) never waits on a lock held by a plain create's first step.
   */
  async createInTransaction(tx: Queryable, token: StoredToken, now: number, dedupeWithin?: readonly ContainerScope[]): Promise<CreateTokenResult> {
    if (probesDuplicate(token)) {
      await this.#lockFingerprint(tx, token);
      const duplicate = await this.#findDuplicate(tx, token, now, null, dedupeWithin);
      if (duplicate !== null) return { status: 'duplicate', existing: duplicate };
    }
    return (await this.#insert(tx, token)) ? CREATED : ID_CONFLICT;
  }

  /**
   * Token reads of one event-loop turn go out as one statement (turn-batch.ts); reads asked for
   * while one is in flight go out together once it has answered.
   */
  readonly #reads = new TurnBatch<TokenLookup, StoredToken | null>(
    async ({ tenantId, id, now }) => {
      const { rows } = await this.#db.query(this.#sql.getLive, [tenantId, id, now]);
      return rows.length === 0 ? null : toStoredToken(rows[0]!, tenantId);
    },
    async (lookups) => {
      const { rows } = await this.#db.query(this.#sql.getLiveMany, [lookups.map((l) => l.tenantId), lookups.map((l) => l.id), lookups.map((l) => l.now)]);
      const found: Array<StoredToken | null> = lookups.map(() => null);
      for (const row of rows) {
        const n = Number(row['lookup']) - 1;
        found[n] = toStoredToken(row, lookups[n]!.tenantId);
      }
      return found;
    },
    { maxInFlight: 1 },
  );

  getToken(tenantId: string, id: string, now: number): Promise<StoredToken | null> {
    return this.#reads.load({ tenantId, id, now });
  }

  async listTokens(tenantId: string, filter: TokenFilter, page: PageRequest, now: number): Promise<PageResult<StoredToken>> {
    const byKeys = Object.keys(filter?.metadata ?? {}).length > 0 || (filter?.searchHashes?.length ?? 0) > 0;
    const tenantKey = byKeys ? await this.#tenantKey(tenantId) : null;
    return runPage(this.#db, tokenListQuery(this.#quoted, tenantId, filter ?? {}, now, tenantKey), page, (row) => toStoredToken(row, tenantId));
  }

  /** The tenant's integer key, kept once found (a key, once given, never changes); null while it has none. */
  async #tenantKey(tenantId: string): Promise<number | null> {
    let key = this.#tenantKeys.get(tenantId);
    if (key === undefined) {
      const { rows } = await this.#db.query(this.#sql.tenantKey, [tenantId]);
      if (rows.length === 0) return null;
      key = rows[0]!['key'] as number;
      if (this.#tenantKeys.size >= MAX_TENANT_KEYS) this.#tenantKeys.clear();
      this.#tenantKeys.set(tenantId, key);
    }
    return key;
  }

  updateToken(next: StoredToken, audit: AuditEntry, now: number, dedupeWithin?: readonly ContainerScope[]): Promise<UpdateTokenResult> {
    return this.#db.transaction(async (tx) => {
      // The same lock order as create (fingerprint, then row), so two writers cannot deadlock.
      if (probesDuplicate(next)) await this.#lockFingerprint(tx, next);
      const current = await tx.query(this.#sql.lockLive, [next.tenantId, next.id, now]);
      if (current.rows.length === 0) return NOT_FOUND;
      const row = current.rows[0]!;
      const wasDeduplicated = ((row['flags'] as number) & 1) !== 0;
      if (probesDuplicate(next) && (nullableHashText(row['fingerprint'] as Buffer | null) !== next.fingerprint || !wasDeduplicated)) {
        const duplicate = await this.#findDuplicate(tx, next, now, next.id, dedupeWithin);
        if (duplicate !== null) return { status: 'duplicate', existing: duplicate };
      }
      await tx.query(this.#sql.replace, [row['seq'], ...mutableTokenValues(next), ...auditValues(audit), row['tenant']]);
      return UPDATED;
    });
  }

  async deleteToken(tenantId: string, id: string, deletedBy: string, audit: AuditEntry, now: number): Promise<boolean> {
    const { rows } = await this.#db.query(this.#sql.delete, [tenantId, id, now, deletedBy, ...auditValues(audit)]);
    return rows[0]?.['removed'] === 1;
  }

  async purgeExpiredTokens(now: number, limit: number): Promise<ExpiredTokenRecord[]> {
    const { rows } = await this.#db.query(this.#sql.purgeExpired, [now, checkLimit(limit), EXPIRY_ACTOR, EXPIRY_OPERATION]);
    return rows.map((row) => ({ tenantId: row['tenant_id'] as string, id: row['id'] as string, type: row['type'] as string, expiresAt: row['expires_at'] as number }));
  }

  /** In seq order, resuming where this instance's previous walk for the tenant and version began (KeyVersionWalk). */
  async listTokensBelowKeyVersion(tenantId: string, version: number, limit: number): Promise<StoredToken[]> {
    const from = this.#keyVersionWalk.start(tenantId, version, limit);
    let { rows } = await this.#db.query(this.#belowKeyVersion, [tenantId, version, from, limit]);
    if (rows.length === 0 && from > 0) ({ rows } = await this.#db.query(this.#belowKeyVersion, [tenantId, version, 0, limit]));
    this.#keyVersionWalk.found(tenantId, version, rows);
    return rows.map((row) => toStoredToken(row, tenantId));
  }

  /**
   * See Store.createTokens: one transaction. The fingerprint locks of every deduplicating item are
   * taken first, in a fixed order, so two such calls cannot deadlock on each other's locks; an id
   * conflict rolls the transaction back.
   */
  async createTokens(tokens: readonly StoredToken[], now: number, dedupeWithin?: readonly ContainerScope[]): Promise<CreateTokensResult> {
    try {
      const results = await this.#db.transaction(async (tx) => {
        const locks = [...new Map(tokens.filter(probesDuplicate).map((t) => [JSON.stringify([t.tenantId, t.type, t.fingerprint]), t])).entries()];
        locks.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
        for (const [, token] of locks) await this.#lockFingerprint(tx, token);
        const out: CreateTokenResult[] = [];
        for (const [index, token] of tokens.entries()) {
          const duplicate = probesDuplicate(token) ? await this.#findDuplicate(tx, token, now, null, dedupeWithin) : null;
          if (duplicate !== null) out.push({ status: 'duplicate', existing: duplicate });
          else if (await this.#insert(tx, token)) out.push(CREATED);
          else throw new IdConflictAt(index);
        }
        return out;
      });
      return { status: 'created', results };
    } catch (error) {
      if (error instanceof IdConflictAt) return { status: 'id_conflict', index: error.index };
      throw error;
    }
  }

  /**
   * Inserts the token (its indexes follow its row); false when the id is taken. A tenant's first
   * token gives the tenant its key first, in `db` (inside a transaction the key commits with it).
   */
  async #insert(db: Queryable, token: StoredToken): Promise<boolean> {
    const values = [token.tenantId, token.id, ...mutableTokenValues(token), token.createdBy, token.createdAt];
    let { rows } = await db.query(this.#sql.create, values);
    if (rows[0]!['tenant'] === null) {
      await db.query(this.#sql.ensureTenantKey, [token.tenantId]);
      ({ rows } = await db.query(this.#sql.create, values));
    }
    return rows[0]!['seq'] !== null;
  }

  /**
   * Inserts tokens as #insert does, in one statement; whether each was created. Of several with the
   * same tenant and id only the first is sent: the others are conflicts whatever its outcome.
   */
  async #insertMany(tokens: readonly StoredToken[]): Promise<boolean[]> {
    for (const tenantId of new Set(tokens.map((token) => token.tenantId))) {
      if (this.#keyed.has(tenantId)) continue;
      await this.#db.query(this.#sql.ensureTenantKey, [tenantId]);
      this.#keyed.add(tenantId);
    }
    const columns: unknown[][] = Array.from({ length: MUTABLE_TOKEN_COLUMNS.length + 4 }, () => []);
    const keys = tokens.map((token) => `${token.tenantId}\u0000${token.id}`);
    const seen = new Set<string>();
    const first = keys.map((key) => !seen.has(key) && seen.add(key) !== undefined);
    for (const [i, token] of tokens.entries()) {
      if (!first[i]) continue;
      const values = [token.tenantId, token.id, ...mutableTokenValues(token), token.createdBy, token.createdAt];
      for (let c = 0; c < values.length; c++) columns[c]!.push(values[c]);
    }
    const { rows } = await this.#db.query(this.#sql.createMany, columns);
    const created = new Set(rows.map((row) => `${row['tenant_id'] as string}\u0000${row['id'] as string}`));
    return keys.map((key, i) => first[i]! && created.has(key));
  }

  async #lockFingerprint(tx: Queryable, token: StoredToken): Promise<void> {
    const key = JSON.stringify([this.#schema, token.tenantId, token.type, token.fingerprint]);
    await tx.query('SELECT pg_advisory_xact_lock($1::int4, hashtext($2))', [DEDUPE_LOCK_CLASS, key]);
  }

  async #findDuplicate(tx: Queryable, token: StoredToken, now: number, exceptId: string | null, within: readonly ContainerScope[] | undefined): Promise<StoredToken | null> {
    const { rows } = await tx.query(this.#sql.findLiveDuplicate, [token.tenantId, hashBytes(token.fingerprint!), token.type, now, exceptId, scopesParam(within)]);
    return rows.length === 0 ? null : toStoredToken(rows[0]!, token.tenantId);
  }
}
