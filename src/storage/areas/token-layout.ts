import { byDialect, sql, table, type Piece, type Sql } from '../sql/sql.js';

// What the two stores' token layouts spell differently (docs/storage.md): SQLite moves a deleted
// token's reference into deleted_tokens, while PostgreSQL empties the token's row in tokens and
// stamps it deleted_at (one table, one primary key deciding every id, across instances). Both name
// the tenant by its integer key from tenant_keys.

/** The integer key of the tenant named by argument `n` (NULL when it has none, and so no tokens). */
export const tenantKey = (n: number): Sql => sql`(SELECT key FROM ${table('tenant_keys')} WHERE tenant_id = ${n})`;

/** ` AND` the row is a live token's, not a deleted one's reference: nothing to test on SQLite, whose tokens table holds no references. */
export const NOT_DELETED: Piece = byDialect({ sqlite: '', postgres: ' AND deleted_at IS NULL' });

/** The references of deleted tokens (id, type, deleted_at, deleted_by), followed by further `AND` conditions. */
export const DELETED_REFERENCES: Piece = byDialect({
  sqlite: sql`${table('deleted_tokens')} WHERE true`,
  postgres: sql`${table('tokens')} WHERE deleted_at IS NOT NULL`,
});
