import type { MigrationProgress } from '../store.js';
import { leanValues } from '../token-columns.js';
import type { Queryable } from './pg-executor.js';
import { LEGACY_TOKEN_COLUMNS, legacyToken } from './legacy-token-rows.js';
import { lookupKeys } from './token-rows.js';

/**
 * The lean token layout on PostgreSQL (docs/storage.md, The token layout (PostgreSQL)):
 * - tokens name their tenant by an integer key (tenant_keys) rather than its 36-character id;
 * - defaults are left NULL and hashes stored as bytes (token-columns.ts, shared with SQLite);
 * - metadata pairs and search values are not rows of their own: the row holds their 32-byte keys
 *   (`lookup`) and one GIN index over token_lookup_keys(tenant, lookup) stores each key once, with
 *   the tenant's key in front of it, and a compressed list of the rows that hold it;
 * - a deleted token stays as its reference record, the same row emptied (ciphertext and every
 *   indexed column NULL, deleted_at set), so the primary key (tenant, id) alone keeps an id from
 *   ever being used twice, and a creation writes the row and its indexes only (no token_ids);
 * - indexes: the primary key (tenant, id), (tenant, seq) of live rows for creation-order pages,
 *   (tenant, fingerprint), the lookup keys, and the partial expiry and cvc indexes. A list by type
 *   walks the tenant's rows in creation order, as an unfiltered list does, rather than keep a
 *   (tenant, type) index that every creation would write. Every key leads with the tenant.
 * Columns are ordered so the fixed-width ones pack without alignment padding.
 */
const NEXT_TABLES = `
  -- A tenant's integer key, given when its first token is written (tokens do not require a tenants row).
  CREATE TABLE IF NOT EXISTS tenant_keys (
    tenant_id text PRIMARY KEY,
    key integer NOT NULL GENERATED ALWAYS AS IDENTITY UNIQUE
  );
  CREATE TABLE IF NOT EXISTS tokens_next (
    seq bigint NOT NULL,              -- creation order, the paging cursor
    created_at bigint NOT NULL,
    tenant integer NOT NULL,          -- tenant_keys.key
    key_version integer NOT NULL,
    flags smallint NOT NULL,          -- token-columns.ts
    id text NOT NULL,
    type text NOT NULL,
    ciphertext bytea,                 -- NULL: a deleted token's reference record
    fingerprint bytea,                -- token-bytes.ts
    search_hashes bytea,
    lookup bytea,                     -- token-rows.ts lookupKeys: 32 bytes per metadata pair and search value
    fingerprint_expression text,      -- NULL: the type's default (token-columns.ts, as every NULL below)
    mask text,
    containers text,
    metadata text,
    search_indexes text,
    created_by text NOT NULL,
    modified_by text,
    modified_at bigint,
    expires_at bigint,
    cvc_purge_at bigint,
    deleted_at bigint,
    deleted_by text
  );
  CREATE TABLE IF NOT EXISTS tokenvault_migrations_progress (
    version integer PRIMARY KEY,
    cursor bigint NOT NULL,           -- the last old seq copied
    done bigint NOT NULL,
    total bigint NOT NULL
  );
`;

/**
 * Swaps the copied table in, in the migration's own transaction (after every batch is copied): the
 * sequence continues past every seq the old table gave, deleted tokens' references join the table,
 * the indexes are built on the full table (packed tighter than rows inserted one at a time would
 * leave them), and the idempotency triggers of migration 3 follow the new layout.
 */
export const LEAN_TOKENS_MIGRATION = `
  ALTER TABLE tokens_next ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
  SELECT setval(pg_get_serial_sequence('tokens_next', 'seq'),
    greatest(nextval(pg_get_serial_sequence('tokens', 'seq')), coalesce((SELECT max(seq) FROM tokens_next), 0) + 1));
  -- The old layout kept no creation stamp for a deleted token: its reference takes the deletion's.
  INSERT INTO tokens_next (tenant, id, type, key_version, flags, created_by, created_at, deleted_at, deleted_by)
    SELECT k.key, r.id, r.type, 0, 0, r.deleted_by, r.deleted_at, r.deleted_at, r.deleted_by
      FROM token_ids r JOIN tenant_keys k ON k.tenant_id = r.tenant_id WHERE r.deleted_at IS NOT NULL ORDER BY r.deleted_at;
  DROP TABLE token_metadata, token_search, token_ids, tokens;
  ALTER TABLE tokens_next RENAME TO tokens;
  ALTER SEQUENCE tokens_next_seq_seq RENAME TO tokens_seq_seq;
  ALTER TABLE tokens ADD CONSTRAINT tokens_pkey PRIMARY KEY (tenant, id);
  CREATE INDEX tokens_tenant_seq ON tokens (tenant, seq) WHERE deleted_at IS NULL;
  CREATE INDEX tokens_tenant_fingerprint ON tokens (tenant, fingerprint) WHERE fingerprint IS NOT NULL;
  CREATE INDEX tokens_expires_at ON tokens (expires_at, seq) WHERE expires_at IS NOT NULL;
  CREATE INDEX tokens_cvc_purge_at ON tokens (cvc_purge_at) WHERE cvc_purge_at IS NOT NULL;
  -- The GIN entries of a token: each 32-byte key of its lookup column behind the tenant's 4 bytes.
  CREATE FUNCTION token_lookup_keys(tenant integer, lookup bytea) RETURNS bytea[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT array_agg(int4send(tenant) || substring(lookup FROM i FOR 32)) FROM generate_series(1, length(lookup), 32) AS i
  $$;
  -- Not partial: the planner weighs a filter's keys by the statistics of an index expression only
  -- when the index has no predicate (a token without keys costs a TID in the NULL entry's list).
  -- No pending list (fastupdate): every search would scan it whole until a vacuum merged it, and
  -- the planner, counting it, would walk the tenant's rows instead.
  CREATE INDEX tokens_lookup ON tokens USING gin (token_lookup_keys(tenant, lookup)) WITH (fastupdate = off);
  CREATE OR REPLACE FUNCTION idempotency_withdraw_token() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
      tenant text := (SELECT tenant_id FROM tenant_keys WHERE key = OLD.tenant);
    BEGIN
      UPDATE idempotency_keys k SET state = 'withdrawn', status = NULL, body = NULL, withdraw_at = NULL
        FROM idempotency_tokens r
        WHERE r.tenant_id = tenant AND r.token_id = OLD.id AND k.state = 'done'
          AND k.tenant_id = r.tenant_id AND k.application_id = r.application_id AND k.key = r.key AND k.created_at = r.created_at;
      DELETE FROM idempotency_tokens WHERE tenant_id = tenant AND token_id = OLD.id;
      RETURN NULL;
    END
  $$;
  CREATE TRIGGER idempotency_withdraw_deleted_token AFTER UPDATE OF deleted_at ON tokens FOR EACH ROW
    WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL) EXECUTE FUNCTION idempotency_withdraw_token();
  CREATE TRIGGER idempotency_withdraw_cvc AFTER UPDATE OF cvc_purge_at ON tokens FOR EACH ROW
    WHEN (OLD.cvc_purge_at IS NOT NULL AND NEW.cvc_purge_at IS NULL AND NEW.deleted_at IS NULL) EXECUTE FUNCTION idempotency_withdraw_token();
  CREATE TRIGGER idempotency_withdraw_removed_token AFTER DELETE ON tokens FOR EACH ROW
    WHEN (OLD.deleted_at IS NULL) EXECUTE FUNCTION idempotency_withdraw_token();
  DROP TABLE tokenvault_migrations_progress;
  ANALYZE tokens;
`;

/** Tokens copied per transaction: a kill loses at most one batch of work, and a batch holds its locks briefly. */
export const LEAN_BATCH = 5000;

const COPIED_COLUMNS: readonly (readonly [column: string, type: string])[] = [
  ['seq', 'int8'],
  ['tenant', 'int4'],
  ['id', 'text'],
  ['type', 'text'],
  ['ciphertext', 'bytea'],
  ['key_version', 'int4'],
  ['fingerprint', 'bytea'],
  ['fingerprint_expression', 'text'],
  ['mask', 'text'],
  ['containers', 'text'],
  ['metadata', 'text'],
  ['search_indexes', 'text'],
  ['search_hashes', 'bytea'],
  ['flags', 'int2'],
  ['lookup', 'bytea'],
  ['created_by', 'text'],
  ['created_at', 'int8'],
  ['modified_by', 'text'],
  ['modified_at', 'int8'],
  ['expires_at', 'int8'],
  ['cvc_purge_at', 'int8'],
];

const INSERT_NEXT =
  `INSERT INTO tokens_next (${COPIED_COLUMNS.map(([column]) => column).join(', ')}) ` +
  `SELECT * FROM unnest(${COPIED_COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})`;

/** Runs one step of the copy in a transaction holding the schema's migration lock, search_path set to the schema. */
export type MigrationStep = <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T>;

/**
 * Copies the tokens into the lean table in batches, each its own transaction (`step`) that records
 * how far it got (tokenvault_migrations_progress), so a killed migration resumes at the batch it was
 * writing; instances migrating together take turns on the migration lock and share the batches.
 * The old tables stay as they were until LEAN_TOKENS_MIGRATION swaps the copy in, so the previous
 * version's instances must be stopped first (their writes after a batch would not be copied; after
 * the swap their statements fail).
 */
export async function copyTokensLean(step: MigrationStep, version: number, report: (progress: MigrationProgress) => void, batch = LEAN_BATCH): Promise<void> {
  await step(async (tx) => {
    await tx.query(NEXT_TABLES);
    const { rows } = await tx.query('SELECT 1 FROM tokenvault_migrations_progress WHERE version = $1', [version]);
    if (rows.length > 0) return;
    await tx.query(
      'INSERT INTO tenant_keys (tenant_id) SELECT tenant_id FROM (SELECT tenant_id FROM tokens UNION SELECT tenant_id FROM token_ids) u ORDER BY tenant_id ON CONFLICT DO NOTHING',
    );
    await tx.query('INSERT INTO tokenvault_migrations_progress (version, cursor, done, total) SELECT $1, 0, 0, count(*) FROM tokens', [version]);
  });
  for (;;) {
    const { done, total, copied } = await step(async (tx) => {
      const at = (await tx.query('SELECT cursor, done, total FROM tokenvault_migrations_progress WHERE version = $1', [version])).rows[0]!;
      const { rows } = await tx.query(
        `SELECT k.key AS tenant, ${LEGACY_TOKEN_COLUMNS} FROM tokens t JOIN tenant_keys k ON k.tenant_id = t.tenant_id WHERE t.seq > $1 ORDER BY t.seq LIMIT $2`,
        [at['cursor'], batch],
      );
      const columns: unknown[][] = COPIED_COLUMNS.map(() => []);
      for (const row of rows) {
        const token = legacyToken(row);
        const values = [
          row['seq'],
          row['tenant'],
          token.id,
          token.type,
          token.ciphertext,
          token.keyVersion,
          ...leanValues(token),
          lookupKeys(token.metadata, token.searchHashes),
          token.createdBy,
          token.createdAt,
          token.modifiedBy,
          token.modifiedAt,
          token.expiresAt,
          token.cvcPurgeAt,
        ];
        values.forEach((value, i) => columns[i]!.push(value));
      }
      if (rows.length > 0) {
        await tx.query(INSERT_NEXT, columns);
        await tx.query('UPDATE tokenvault_migrations_progress SET cursor = $1, done = done + $2 WHERE version = $3', [rows.at(-1)!['seq'], rows.length, version]);
      }
      return { done: Number(at['done']) + rows.length, total: Number(at['total']), copied: rows.length };
    });
    if (total > 0) report({ version, table: 'tokens', done, total: Math.max(total, done) });
    if (copied < batch) return;
  }
}
