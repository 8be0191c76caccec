import type { BetterSqlite3Database } from './sqlite-options.js';

/**
 * The SQLite schema as numbered migrations: entry i is version i + 1. Append only; never edit an
 * entry that has shipped. Each runs in its own transaction and is recorded in `schema_migrations`.
 *
 * Index choices. Token creation is the hot path and every index is one more B-tree page written
 * (and checkpointed) per commit, so tokens carry only what the required reads need:
 * - tokens are keyed by an INTEGER `seq` (the rowid: creation order and the paging cursor), with
 *   UNIQUE (tenant_id, id) for get by id;
 * - (tenant_id, type[, seq]) lists by type in creation order without a sort;
 * - (tenant_id, fingerprint, type) serves both the dedupe probe and the `fingerprints` filter
 *   (which has no type);
 * - expires_at and cvc_purge_at are partial indexes: most tokens have neither, so they cost nothing
 *   on most writes, and the sweep only looks for rows that have one;
 * - token_metadata and token_search hold one row per lower-cased metadata pair / blind index value,
 *   keyed by token (for deletion) and indexed by value (for filters);
 * - deliberately absent: (tenant_id) (an unfiltered list walks the table in seq order, which is
 *   one page per page when the tenant owns most tokens), (tenant_id, key_version) (re-encryption
 *   walks the table, see SqliteTokens.listBelowKeyVersion) and any audit_log index (the log is
 *   appended by every write and read rarely).
 * Plans are checked by test/storage/sqlite-store.test.ts with EXPLAIN QUERY PLAN.
 */
export const MIGRATIONS: readonly string[] = Object.freeze([
  /* 1: initial schema */ `
  CREATE TABLE tenants (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL
  );

  CREATE TABLE wrapped_keys (
    tenant_id TEXT NOT NULL,
    purpose TEXT NOT NULL CHECK (purpose IN ('data', 'index')),
    version INTEGER NOT NULL,
    wrapped BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, purpose, version)
  ) WITHOUT ROWID;

  CREATE TABLE tokens (
    seq INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    type TEXT NOT NULL,
    ciphertext BLOB NOT NULL,
    key_version INTEGER NOT NULL,
    fingerprint TEXT,
    fingerprint_expression TEXT,
    mask TEXT,                      -- JSON; NULL when the token has no mask
    containers TEXT NOT NULL,       -- JSON array of lower-case paths
    metadata TEXT NOT NULL,         -- JSON object, as given (the filter uses token_metadata)
    search_indexes TEXT NOT NULL,   -- JSON array of expressions
    search_hashes TEXT NOT NULL,    -- JSON array of blind index values (the filter uses token_search)
    deduplicate INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    modified_by TEXT,
    modified_at INTEGER,
    expires_at INTEGER,
    cvc_purge_at INTEGER,
    UNIQUE (tenant_id, id)
  );
  -- Every index entry ends with the rowid (seq): (tenant_id, type) is (tenant_id, type, seq), in
  -- creation order. No (tenant_id) index: see the header comment.
  CREATE INDEX tokens_tenant_type_seq ON tokens (tenant_id, type);
  CREATE INDEX tokens_tenant_fingerprint ON tokens (tenant_id, fingerprint, type);
  CREATE INDEX tokens_expires_at ON tokens (expires_at) WHERE expires_at IS NOT NULL;
  CREATE INDEX tokens_cvc_purge_at ON tokens (cvc_purge_at) WHERE cvc_purge_at IS NOT NULL;

  CREATE TABLE token_metadata (
    token_seq INTEGER NOT NULL REFERENCES tokens (seq) ON DELETE CASCADE,
    tenant_id TEXT NOT NULL,
    key_lower TEXT NOT NULL,
    value_lower TEXT NOT NULL,
    PRIMARY KEY (token_seq, key_lower, value_lower)
  ) WITHOUT ROWID;
  CREATE INDEX token_metadata_lookup ON token_metadata (tenant_id, key_lower, value_lower, token_seq);

  CREATE TABLE token_search (
    token_seq INTEGER NOT NULL REFERENCES tokens (seq) ON DELETE CASCADE,
    tenant_id TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (token_seq, hash)
  ) WITHOUT ROWID;
  CREATE INDEX token_search_lookup ON token_search (tenant_id, hash, token_seq);

  -- What stays of a deleted or expired token: its id is never reused within the tenant.
  CREATE TABLE deleted_tokens (
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    type TEXT NOT NULL,
    deleted_at INTEGER NOT NULL,
    deleted_by TEXT NOT NULL,
    PRIMARY KEY (tenant_id, id)
  ) WITHOUT ROWID;

  CREATE TABLE applications (
    seq INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    permissions TEXT NOT NULL,      -- JSON array
    rules TEXT NOT NULL,            -- JSON array
    key_hash TEXT NOT NULL,
    key_lookup TEXT NOT NULL,
    created_by TEXT,
    created_at INTEGER NOT NULL,
    modified_by TEXT,
    modified_at INTEGER,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX applications_tenant_seq ON applications (tenant_id);
  CREATE INDEX applications_key_lookup ON applications (key_lookup);

  CREATE TABLE formulas (
    seq INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    code TEXT NOT NULL,
    configuration TEXT NOT NULL,        -- JSON array
    request_parameters TEXT NOT NULL,   -- JSON array
    created_by TEXT,
    created_at INTEGER NOT NULL,
    modified_by TEXT,
    modified_at INTEGER,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX formulas_tenant_seq ON formulas (tenant_id);

  CREATE TABLE reactors (
    seq INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    name_lower TEXT NOT NULL,       -- lower-cased in JS (Unicode-aware) for the name filter
    formula_id TEXT NOT NULL,
    configuration TEXT NOT NULL,    -- JSON object
    application_id TEXT,
    created_by TEXT,
    created_at INTEGER NOT NULL,
    modified_by TEXT,
    modified_at INTEGER,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX reactors_tenant_seq ON reactors (tenant_id);
  CREATE INDEX reactors_tenant_formula ON reactors (tenant_id, formula_id);

  CREATE TABLE idempotency_keys (
    tenant_id TEXT NOT NULL,
    application_id TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
    status INTEGER,
    body TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, application_id, key)
  ) WITHOUT ROWID;

  CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    operation TEXT NOT NULL,
    resource_id TEXT,
    outcome TEXT NOT NULL CHECK (outcome IN ('success', 'failure')),
    detail TEXT,
    at INTEGER NOT NULL
  );
  -- Append-only: rows are never changed or removed (a later migration may add retention).
  CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
  CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
  `,
  /* 2: the sweep removes expired idempotency records */ `
  CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
  `,
  /*
   * 3: stored responses are encrypted, and withdrawn with the tokens they carry. Records written
   * before held the response in clear: they are dropped (a retry with such a key runs anew), with
   * secure_delete on so the freed pages are zeroed rather than left holding the plaintext.
   * idempotency_tokens lists the tokens whose data a stored response may carry; the triggers
   * withdraw such a response in the transaction that deletes (or expires) the token or removes its
   * cvc, and drop a record's references with the record (or when its key is claimed anew).
   */ `
  PRAGMA secure_delete = ON;
  DELETE FROM idempotency_keys;
  DROP TABLE idempotency_keys;
  CREATE TABLE idempotency_keys (
    tenant_id TEXT NOT NULL,
    application_id TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('in_flight', 'done', 'withdrawn')),
    status INTEGER,
    body BLOB,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    withdraw_at INTEGER,
    PRIMARY KEY (tenant_id, application_id, key)
  ) WITHOUT ROWID;
  CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
  PRAGMA secure_delete = OFF;

  CREATE TABLE idempotency_tokens (
    tenant_id TEXT NOT NULL,
    token_id TEXT NOT NULL,
    application_id TEXT NOT NULL,
    key TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, token_id, application_id, key, created_at)
  ) WITHOUT ROWID;
  CREATE INDEX idempotency_tokens_record ON idempotency_tokens (tenant_id, application_id, key, created_at);

  CREATE TRIGGER idempotency_withdraw_deleted_token AFTER DELETE ON tokens BEGIN
    UPDATE idempotency_keys SET state = 'withdrawn', status = NULL, body = NULL, withdraw_at = NULL
      WHERE state = 'done' AND (tenant_id, application_id, key, created_at) IN
        (SELECT tenant_id, application_id, key, created_at FROM idempotency_tokens WHERE tenant_id = OLD.tenant_id AND token_id = OLD.id);
    DELETE FROM idempotency_tokens WHERE tenant_id = OLD.tenant_id AND token_id = OLD.id;
  END;
  CREATE TRIGGER idempotency_withdraw_cvc AFTER UPDATE OF cvc_purge_at ON tokens
    WHEN OLD.cvc_purge_at IS NOT NULL AND NEW.cvc_purge_at IS NULL BEGIN
    UPDATE idempotency_keys SET state = 'withdrawn', status = NULL, body = NULL, withdraw_at = NULL
      WHERE state = 'done' AND (tenant_id, application_id, key, created_at) IN
        (SELECT tenant_id, application_id, key, created_at FROM idempotency_tokens WHERE tenant_id = OLD.tenant_id AND token_id = OLD.id);
    DELETE FROM idempotency_tokens WHERE tenant_id = OLD.tenant_id AND token_id = OLD.id;
  END;
  CREATE TRIGGER idempotency_tokens_record_gone AFTER DELETE ON idempotency_keys BEGIN
    DELETE FROM idempotency_tokens
      WHERE tenant_id = OLD.tenant_id AND application_id = OLD.application_id AND key = OLD.key AND created_at = OLD.created_at;
  END;
  CREATE TRIGGER idempotency_tokens_record_reclaimed AFTER UPDATE OF created_at ON idempotency_keys
    WHEN OLD.created_at <> NEW.created_at BEGIN
    DELETE FROM idempotency_tokens
      WHERE tenant_id = OLD.tenant_id AND application_id = OLD.application_id AND key = OLD.key AND created_at = OLD.created_at;
  END;
  `,
  // 4: background jobs (src/jobs/job-queue.ts). A job is due when run_at has come and it is not
  // leased or its lease ran out; the claim is one UPDATE … RETURNING, atomic by itself.
  `
  CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    tenant_id TEXT,
    kind TEXT NOT NULL,
    key TEXT UNIQUE,
    payload TEXT NOT NULL,
    run_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_expires_at INTEGER,
    created_at INTEGER NOT NULL,
    last_error TEXT
  );
  CREATE INDEX jobs_due ON jobs (run_at);
  `,
  // 5: asynchronous reactor runs: args and results sealed with the tenant key, removed 24 h after they finish.
  `
  CREATE TABLE reactor_requests (
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    reactor_id TEXT NOT NULL,
    application_id TEXT NOT NULL,
    status TEXT NOT NULL,
    callback_url TEXT,
    timeout_ms INTEGER NOT NULL,
    args BLOB NOT NULL,
    result BLOB,
    error TEXT,
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    completed_at INTEGER,
    expires_at INTEGER,
    PRIMARY KEY (tenant_id, id)
  );
  CREATE INDEX reactor_requests_expiry ON reactor_requests (expires_at) WHERE expires_at IS NOT NULL;
  `,
  /* 6: reactors with inline code (issue 12): a reactor runs either its formula's code or its own */ `
  -- SQLite cannot drop formula_id's NOT NULL without rebuilding the table (and dropping columns
  -- other migrations may add); the empty string stands for "no formula" (formula ids are never
  -- empty), mapped to null in record-rows.ts.
  ALTER TABLE reactors ADD COLUMN code TEXT;
  `,
  /* 7: application keys and sessions: several keys per application, keys moved out of applications */ `
  CREATE TABLE application_keys (
    seq INTEGER PRIMARY KEY,        -- creation order
    tenant_id TEXT NOT NULL,
    application_id TEXT NOT NULL,
    id TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    key_lookup TEXT NOT NULL,
    created_by TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (tenant_id, application_id, id)
  );
  CREATE INDEX application_keys_lookup ON application_keys (key_lookup);
  INSERT INTO application_keys (tenant_id, application_id, id, key_hash, key_lookup, created_by, created_at)
    SELECT tenant_id, id,
      lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' ||
        substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))),
      key_hash, key_lookup, created_by, coalesce(modified_at, created_at)
    FROM applications ORDER BY seq;
  DROP INDEX applications_key_lookup;
  ALTER TABLE applications DROP COLUMN key_hash;
  ALTER TABLE applications DROP COLUMN key_lookup;

  CREATE TABLE sessions (
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    application_id TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    key_lookup TEXT NOT NULL,
    nonce_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    authorized_by TEXT,
    authorized_at INTEGER,
    grants TEXT,                    -- JSON { permissions, rules }
    PRIMARY KEY (tenant_id, id)
  ) WITHOUT ROWID;
  CREATE INDEX sessions_key_lookup ON sessions (key_lookup);
  CREATE UNIQUE INDEX sessions_nonce ON sessions (tenant_id, nonce_hash);
  CREATE INDEX sessions_expires_at ON sessions (expires_at);
  CREATE INDEX sessions_application ON sessions (tenant_id, application_id);
  CREATE INDEX sessions_authorized_by ON sessions (tenant_id, authorized_by) WHERE authorized_by IS NOT NULL;

  -- An application's credentials go with it, in the deleting transaction.
  CREATE TRIGGER application_credentials_gone AFTER DELETE ON applications BEGIN
    DELETE FROM application_keys WHERE tenant_id = OLD.tenant_id AND application_id = OLD.id;
    DELETE FROM sessions WHERE tenant_id = OLD.tenant_id AND application_id = OLD.id;
    DELETE FROM sessions WHERE tenant_id = OLD.tenant_id AND authorized_by = OLD.id;
  END;
  `,
  /* 8: webhooks: event webhooks, the per-tenant signing secret (sealed), deliveries (payload sealed) */ `
  CREATE TABLE webhooks (
    seq INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    created_by TEXT,
    created_at INTEGER NOT NULL,
    modified_by TEXT,
    modified_at INTEGER,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX webhooks_tenant_seq ON webhooks (tenant_id, seq);

  CREATE TABLE webhook_secrets (
    tenant_id TEXT PRIMARY KEY,
    sealed BLOB NOT NULL,
    version INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE webhook_deliveries (
    seq INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    webhook_id TEXT,
    request_id TEXT,
    event_type TEXT NOT NULL,
    url TEXT,
    payload BLOB NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts INTEGER NOT NULL,
    history TEXT NOT NULL,
    next_attempt_at INTEGER,
    created_at INTEGER NOT NULL,
    completed_at INTEGER,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (tenant_id, webhook_id, seq);
  CREATE INDEX webhook_deliveries_request ON webhook_deliveries (tenant_id, request_id) WHERE request_id IS NOT NULL;
  CREATE INDEX webhook_deliveries_completed ON webhook_deliveries (completed_at) WHERE completed_at IS NOT NULL;
  `,
]);

/**
 * Applies the migrations not yet recorded, each in its own BEGIN IMMEDIATE transaction that
 * re-reads the applied version first, so two processes opening the same file do not both apply one.
 */
export function runMigrations(db: BetterSqlite3Database, migrations: readonly string[] = MIGRATIONS): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const current = db.prepare('SELECT coalesce(max(version), 0) AS version FROM schema_migrations');
  // The migration time is SQLite's clock: it is bookkeeping, not domain time.
  const record = db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, CAST(unixepoch('subsec') * 1000 AS INTEGER))");
  const apply = db.transaction((version: number, sql: string) => {
    if ((current.get() as { version: number }).version >= version) return;
    db.exec(sql);
    record.run(version);
  });
  let applied = false;
  migrations.forEach((sql, index) => {
    if ((current.get() as { version: number }).version < index + 1) {
      apply.immediate(index + 1, sql);
      applied = true;
    }
  });
  // What a migration removed (migration 3: responses stored in the clear) must leave the main file
  // now, not at some later checkpoint: copy the WAL (holding the zeroed pages) back and empty it.
  if (applied && (db.pragma('journal_mode', { simple: true }) as string) === 'wal') db.pragma('wal_checkpoint(TRUNCATE)');
}
