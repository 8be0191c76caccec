import type { MigrationProgress } from '../store.js';
import { hashBytes } from '../token-bytes.js';
import { LEAN_COLUMN_NAMES, leanValues } from '../token-columns.js';
import type { BetterSqlite3Database } from './sqlite-options.js';
import { legacyToken, LEGACY_TOKEN_COLUMNS, type LegacyTokenRow } from './legacy-token-rows.js';
import { metadataPairs } from '../areas/token-rows.js';

/**
 * The lean token layout (docs/storage.md, The token layout): tokens keyed by the tenant's integer key
 * (tenant_keys) rather than its 36-character id, defaults left NULL (token-columns.ts), hashes as
 * bytes; metadata and search rows stored once, clustered on their lookup key (WITHOUT ROWID), and
 * removed by that key (the row lists its pairs and hashes); one unique (tenant, id) index and one
 * fingerprint index beside the row, so a creation writes few B-tree pages. Lists by type walk
 * the rows in creation order (as an unfiltered list does) rather than keep a (tenant, type) index
 * that every creation would write.
 */
const NEXT_TABLES = `
  -- A tenant's integer key, given when its first token is written (tokens do not require a tenants row).
  CREATE TABLE IF NOT EXISTS tenant_keys (
    key INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE
  );
  CREATE TABLE IF NOT EXISTS tokens_next (
    seq INTEGER PRIMARY KEY,        -- creation order, the paging cursor
    tenant INTEGER NOT NULL,        -- tenant_keys.key
    id TEXT NOT NULL,
    type TEXT NOT NULL,
    ciphertext BLOB NOT NULL,
    key_version INTEGER NOT NULL,
    fingerprint BLOB,               -- token-bytes.ts
    fingerprint_expression TEXT,    -- NULL: the type's default (token-columns.ts, as every NULL below)
    mask TEXT,
    containers TEXT,
    metadata TEXT,
    search_indexes TEXT,
    search_hashes BLOB,
    flags INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    modified_by TEXT,
    modified_at INTEGER,
    expires_at INTEGER,
    cvc_purge_at INTEGER,
    UNIQUE (tenant, id)
  );
  CREATE TABLE IF NOT EXISTS token_metadata_next (
    tenant INTEGER NOT NULL,
    key_lower TEXT NOT NULL,
    value_lower TEXT NOT NULL,
    token_seq INTEGER NOT NULL,
    PRIMARY KEY (tenant, key_lower, value_lower, token_seq)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS token_search_next (
    tenant INTEGER NOT NULL,
    hash BLOB NOT NULL,
    token_seq INTEGER NOT NULL,
    PRIMARY KEY (tenant, hash, token_seq)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS schema_migration_progress (
    version INTEGER PRIMARY KEY,
    cursor INTEGER NOT NULL,        -- the last old seq copied
    done INTEGER NOT NULL,
    total INTEGER NOT NULL
  );
`;

/**
 * Swaps the copied tables in, in the migration's own transaction (after every batch is copied):
 * the references of deleted tokens, the indexes, and the idempotency triggers of migration 3 on the
 * new layout (they name the tenant by id).
 */
export const LEAN_TOKENS_MIGRATION = `
  CREATE TABLE deleted_tokens_next (
    tenant INTEGER NOT NULL,
    id TEXT NOT NULL,
    type TEXT NOT NULL,
    deleted_at INTEGER NOT NULL,
    deleted_by TEXT NOT NULL,
    PRIMARY KEY (tenant, id)
  ) WITHOUT ROWID;
  INSERT INTO deleted_tokens_next (tenant, id, type, deleted_at, deleted_by)
    SELECT n.key, d.id, d.type, d.deleted_at, d.deleted_by FROM deleted_tokens d JOIN tenant_keys n ON n.id = d.tenant_id;
  DROP TABLE token_metadata;
  DROP TABLE token_search;
  DROP TABLE tokens;
  DROP TABLE deleted_tokens;
  ALTER TABLE tokens_next RENAME TO tokens;
  ALTER TABLE token_metadata_next RENAME TO token_metadata;
  ALTER TABLE token_search_next RENAME TO token_search;
  ALTER TABLE deleted_tokens_next RENAME TO deleted_tokens;
  CREATE INDEX tokens_fingerprint ON tokens (tenant, fingerprint, type) WHERE fingerprint IS NOT NULL;
  CREATE INDEX tokens_expires_at ON tokens (expires_at) WHERE expires_at IS NOT NULL;
  CREATE INDEX tokens_cvc_purge_at ON tokens (cvc_purge_at) WHERE cvc_purge_at IS NOT NULL;
  CREATE TRIGGER idempotency_withdraw_deleted_token AFTER DELETE ON tokens BEGIN
    UPDATE idempotency_keys SET state = 'withdrawn', status = NULL, body = NULL, withdraw_at = NULL
      WHERE state = 'done' AND (tenant_id, application_id, key, created_at) IN
        (SELECT tenant_id, application_id, key, created_at FROM idempotency_tokens
          WHERE tenant_id = (SELECT id FROM tenant_keys WHERE key = OLD.tenant) AND token_id = OLD.id);
    DELETE FROM idempotency_tokens WHERE tenant_id = (SELECT id FROM tenant_keys WHERE key = OLD.tenant) AND token_id = OLD.id;
  END;
  CREATE TRIGGER idempotency_withdraw_cvc AFTER UPDATE OF cvc_purge_at ON tokens
    WHEN OLD.cvc_purge_at IS NOT NULL AND NEW.cvc_purge_at IS NULL BEGIN
    UPDATE idempotency_keys SET state = 'withdrawn', status = NULL, body = NULL, withdraw_at = NULL
      WHERE state = 'done' AND (tenant_id, application_id, key, created_at) IN
        (SELECT tenant_id, application_id, key, created_at FROM idempotency_tokens
          WHERE tenant_id = (SELECT id FROM tenant_keys WHERE key = OLD.tenant) AND token_id = OLD.id);
    DELETE FROM idempotency_tokens WHERE tenant_id = (SELECT id FROM tenant_keys WHERE key = OLD.tenant) AND token_id = OLD.id;
  END;
  DROP TABLE schema_migration_progress;
`;

/** Tokens copied per transaction: a kill loses at most one batch of work, and a batch holds the write lock briefly. */
export const LEAN_BATCH = 5000;

const INSERT_NEXT =
  `INSERT INTO tokens_next (seq, tenant, id, type, ciphertext, key_version, ${LEAN_COLUMN_NAMES.join(', ')}, created_by, created_at, modified_by, modified_at, expires_at, cvc_purge_at) ` +
  `VALUES (?, ?, ?, ?, ?, ?, ${LEAN_COLUMN_NAMES.map(() => '?').join(', ')}, ?, ?, ?, ?, ?, ?)`;

/**
 * Copies the tokens into the lean tables in batches, each its own BEGIN IMMEDIATE transaction that
 * records how far it got (schema_migration_progress), so a killed migration resumes at the batch it
 * was writing. The old tables stay as they were until LEAN_TOKENS_MIGRATION swaps the copies in.
 */
export function copyTokensLean(db: BetterSqlite3Database, version: number, report: (progress: MigrationProgress) => void, batch = LEAN_BATCH): void {
  db.transaction(() => {
    db.exec(NEXT_TABLES);
    if (db.prepare('SELECT 1 FROM schema_migration_progress WHERE version = ?').get(version) !== undefined) return;
    db.exec('INSERT OR IGNORE INTO tenant_keys (id) SELECT tenant_id FROM tokens UNION SELECT tenant_id FROM deleted_tokens');
    db.prepare('INSERT INTO schema_migration_progress (version, cursor, done, total) VALUES (?, 0, 0, (SELECT count(*) FROM tokens))').run(version);
  }).immediate();
  const progress = db.prepare('SELECT cursor, done, total FROM schema_migration_progress WHERE version = ?');
  const advance = db.prepare('UPDATE schema_migration_progress SET cursor = ?, done = done + ? WHERE version = ?');
  const read = db.prepare(
    `SELECT t.seq, n.key AS tenant, ${LEGACY_TOKEN_COLUMNS} FROM tokens t CROSS JOIN tenant_keys n ON n.id = t.tenant_id WHERE t.seq > ? ORDER BY t.seq LIMIT ?`,
  );
  const insert = db.prepare(INSERT_NEXT);
  const metadata = db.prepare('INSERT OR IGNORE INTO token_metadata_next (tenant, key_lower, value_lower, token_seq) VALUES (?, ?, ?, ?)');
  const search = db.prepare('INSERT OR IGNORE INTO token_search_next (tenant, hash, token_seq) VALUES (?, ?, ?)');
  const step = db.transaction((): { done: number; total: number; copied: number } => {
    const at = progress.get(version) as { cursor: number; done: number; total: number };
    const rows = read.all(at.cursor, batch) as (LegacyTokenRow & { tenant: number })[];
    for (const row of rows) {
      const token = legacyToken(row);
      insert.run(
        row.seq,
        row.tenant,
        token.id,
        token.type,
        token.ciphertext,
        token.keyVersion,
        ...leanValues(token),
        token.createdBy,
        token.createdAt,
        token.modifiedBy,
        token.modifiedAt,
        token.expiresAt,
        token.cvcPurgeAt,
      );
      for (const [key, value] of metadataPairs(token.metadata)) metadata.run(row.tenant, key, value, row.seq);
      for (const hash of token.searchHashes) search.run(row.tenant, hashBytes(hash), row.seq);
    }
    if (rows.length > 0) advance.run(rows[rows.length - 1]!.seq, rows.length, version);
    return { done: at.done + rows.length, total: at.total, copied: rows.length };
  });
  for (;;) {
    const { done, total, copied } = step.immediate();
    if (total > 0) report({ version, table: 'tokens', done, total: Math.max(total, done) });
    if (copied < batch) return;
  }
}
