/**
 * Versions 1 to 5 of the SQLite schema (migrations.ts appends the later ones and runs them).
 * Append only; never edit an entry that has shipped.
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
 *   walks the table, see belowKeyVersion in areas/tokens.ts) and any audit_log index (the log is
 *   appended by every write and read rarely).
 * Plans are checked by test/storage/sqlite-store.test.ts with EXPLAIN QUERY PLAN.
 */
export const MIGRATIONS_1_TO_5: readonly string[] = [
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
];
