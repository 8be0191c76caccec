import { checkLimit } from '../limit.js';
import { operation, query, type AreaOperations } from '../sql/operation.js';
import { byDialect, raw, sql, table } from '../sql/sql.js';
import type { AreaMethod } from '../store-parts.js';
import { toDeletedToken } from '../token-columns.js';
import { DELETED_REFERENCES, tenantKey } from './token-layout.js';
import { TOKEN_COLUMNS, toStoredToken } from './token-rows.js';

// The token area, written once but for the methods each store writes itself (TOKENS_PER_STORE):
// creation, reads, lists, updates, deletions and the expiry sweep are on the request path or
// write each layout's own index rows (SQLite's token_metadata and token_search tables,
// PostgreSQL's lookup keys), and each store batches them its own way (sqlite/group-commit.ts,
// postgres/turn-batch.ts). The re-encryption walk keeps a resume point per store instance
// (key-version-walk.ts), so each store runs its one statement, belowKeyVersion, itself.

const TOKENS = table('tokens');

/** Tokens whose cvc is due at argument 1, with their tenant's id, across tenants. */
const CVC_DUE = sql`SELECT n.tenant_id, ${raw(TOKEN_COLUMNS)} FROM ${TOKENS} t CROSS JOIN ${table('tenant_keys')} n WHERE n.key = t.tenant AND t.cvc_purge_at <= ${1}`;

/**
 * The live tokens of the tenant named by argument 1, for the re-encryption walk and count. No
 * key_version index (it would cost every creation): SQLite walks the table (`+t.tenant` keeps it off
 * the (tenant, id) index, whose walk would read each row once more), PostgreSQL the tenant's
 * (tenant, seq) index.
 */
const OWN_LIVE = byDialect({
  sqlite: sql`+t.tenant = ${tenantKey(1)}`,
  postgres: sql`t.tenant = ${tenantKey(1)} AND t.deleted_at IS NULL`,
});

export const TOKENS_SQL = {
  /** tenant, id. */
  deleted: sql`SELECT id, type, deleted_at, deleted_by FROM ${DELETED_REFERENCES} AND tenant = ${tenantKey(1)} AND id = ${2}`,
  /**
   * now, limit. Ordered by (cvc_purge_at, tenant, id): the cursor of cvcDueAfter. (CROSS JOIN keeps
   * SQLite's planner walking the tokens by their purge time; PostgreSQL plans it as any join.)
   */
  cvcDue: sql`${CVC_DUE} ORDER BY t.cvc_purge_at, n.tenant_id, t.id LIMIT ${2}`,
  /** now, limit, then the cursor: cvcPurgeAt, tenant, id (the last row of the previous page). */
  cvcDueAfter: sql`${CVC_DUE} AND t.cvc_purge_at >= ${3} AND (t.cvc_purge_at, n.tenant_id, t.id) > (${3}, ${4}, ${5}) ORDER BY t.cvc_purge_at, n.tenant_id, t.id LIMIT ${2}`,
  /** ciphertext, keyVersion, cvcPurgeAt, tenant, id, expected ciphertext. A concurrent writer's row fails the last test (a reference's NULL too). */
  replaceCiphertext: sql`UPDATE ${TOKENS} SET ciphertext = ${1}, key_version = ${2}, cvc_purge_at = ${3} WHERE tenant = ${tenantKey(4)} AND id = ${5} AND ciphertext = ${6}`,
  /** tenant, version. */
  countBelowKeyVersion: sql`SELECT count(*) AS n FROM ${TOKENS} t WHERE ${OWN_LIVE} AND t.key_version < ${2}`,
  /** tenant, version, fromSeq, limit: listTokensBelowKeyVersion's walk in seq order from a resume point (KeyVersionWalk). */
  belowKeyVersion: sql`SELECT ${raw(TOKEN_COLUMNS)} FROM ${TOKENS} t WHERE ${OWN_LIVE} AND t.key_version < ${2} AND t.seq >= ${3} ORDER BY t.seq LIMIT ${4}`,
};

/** The token area's methods that each store writes itself (see above). */
export const TOKENS_PER_STORE = [
  'createToken',
  'createTokens',
  'getToken',
  'listTokens',
  'updateToken',
  'deleteToken',
  'purgeExpiredTokens',
  'listTokensBelowKeyVersion',
] as const satisfies readonly AreaMethod<'tokens'>[];
export type TokensShared = Exclude<AreaMethod<'tokens'>, (typeof TOKENS_PER_STORE)[number]>;

/** The token area but its per-store methods (store-parts.ts, area `tokens`). */
export const TOKENS_SHARED: Pick<AreaOperations<'tokens'>, TokensShared> = {
  getDeletedToken: operation('statement', function* (_d, tenantId, id) {
    const row = (yield query(TOKENS_SQL.deleted, tenantId, id)).rows[0];
    return row === undefined ? null : toDeletedToken(tenantId, row);
  }),

  listCvcDue: operation('statement', function* (_d, now, limit, after) {
    const due = after ? query(TOKENS_SQL.cvcDueAfter, now, checkLimit(limit), after.cvcPurgeAt, after.tenantId, after.id) : query(TOKENS_SQL.cvcDue, now, checkLimit(limit));
    const { rows } = yield due;
    return rows.map((row) => toStoredToken(row));
  }),

  replaceCiphertext: operation('statement', function* (_d, tenantId, id, expected, next) {
    return (yield query(TOKENS_SQL.replaceCiphertext, next.ciphertext, next.keyVersion, next.cvcPurgeAt ?? null, tenantId, id, expected)).changes === 1;
  }),

  countTokensBelowKeyVersion: operation('statement', function* (_d, tenantId, version) {
    return (yield query(TOKENS_SQL.countBelowKeyVersion, tenantId, version)).rows[0]!['n'] as number;
  }),
};
