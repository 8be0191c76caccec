/**
 * Versions 1 to 5 of the PostgreSQL schema (migrations.ts appends the later ones and runs them).
 * Append only; never edit an entry that has shipped.
 *
 * Differences from the SQLite schema (src/storage/sqlite/migrations.ts), and why:
 * - `token_ids` holds every token id ever used in a tenant, and keeps its row when the token is
 *   deleted or purged (deleted_at/deleted_by set: the reference record). Its primary key is what
 *   makes "never reuse an id" atomic across connections: a create inserts the id there with ON
 *   CONFLICT DO NOTHING, and that conflict check sees rows committed by any transaction, which a
 *   NOT EXISTS probe in a concurrent create would not.
 * - token_metadata indexes a SHA-256 digest of each lower-cased (key, value) pair instead of the
 *   texts: b-tree entries are limited to about 2.7 kB and a 1024-character value of non-ASCII
 *   characters exceeds it; a fixed 32 bytes also keeps the index small.
 * - (tenant_id, seq) indexes on tokens and audit_log: a PostgreSQL database is the one several
 *   tenants and instances share, so a tenant's unfiltered list or log page must not walk other
 *   tenants' rows.
 * - JSON columns are `json` (kept as written: object key order is what the caller gave, as in
 *   SQLite's TEXT), except `containers`, which the container filter queries with `?|` (`jsonb`;
 *   arrays keep their order in jsonb).
 * - Epoch-millisecond columns are bigint; ciphertext and wrapped keys are bytea.
 */
export const MIGRATIONS_1_TO_5: readonly string[] = [
  /* 1: initial schema */ `
  CREATE TABLE tenants (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    name text NOT NULL,
    created_at bigint NOT NULL
  );

  CREATE TABLE wrapped_keys (
    tenant_id text NOT NULL,
    purpose text NOT NULL CHECK (purpose IN ('data', 'index')),
    version integer NOT NULL,
    wrapped bytea NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (tenant_id, purpose, version)
  );

  CREATE TABLE token_ids (
    tenant_id text NOT NULL,
    id text NOT NULL,
    type text,                      -- the token's type when it was deleted; NULL while it exists
    deleted_at bigint,
    deleted_by text,
    PRIMARY KEY (tenant_id, id)
  );

  CREATE TABLE tokens (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text NOT NULL,
    id text NOT NULL,
    type text NOT NULL,
    ciphertext bytea NOT NULL,
    key_version integer NOT NULL,
    fingerprint text,
    fingerprint_expression text,
    mask json,                      -- NULL when the token has no mask
    containers jsonb NOT NULL,      -- array of lower-case paths
    metadata json NOT NULL,         -- object, as given (the filter uses token_metadata)
    search_indexes json NOT NULL,   -- array of expressions
    search_hashes json NOT NULL,    -- array of blind index values (the filter uses token_search)
    deduplicate boolean NOT NULL,
    created_by text NOT NULL,
    created_at bigint NOT NULL,
    modified_by text,
    modified_at bigint,
    expires_at bigint,
    cvc_purge_at bigint,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX tokens_tenant_seq ON tokens (tenant_id, seq);
  CREATE INDEX tokens_tenant_type_seq ON tokens (tenant_id, type, seq);
  CREATE INDEX tokens_tenant_fingerprint ON tokens (tenant_id, fingerprint, type);
  CREATE INDEX tokens_expires_at ON tokens (expires_at, seq) WHERE expires_at IS NOT NULL;
  CREATE INDEX tokens_cvc_purge_at ON tokens (cvc_purge_at, seq) WHERE cvc_purge_at IS NOT NULL;

  CREATE TABLE token_metadata (
    token_seq bigint NOT NULL REFERENCES tokens (seq) ON DELETE CASCADE,
    tenant_id text NOT NULL,
    pair bytea NOT NULL,            -- SHA-256 of the lower-cased [key, value] as JSON
    PRIMARY KEY (token_seq, pair)
  );
  CREATE INDEX token_metadata_lookup ON token_metadata (tenant_id, pair, token_seq);

  CREATE TABLE token_search (
    token_seq bigint NOT NULL REFERENCES tokens (seq) ON DELETE CASCADE,
    tenant_id text NOT NULL,
    hash text NOT NULL,
    PRIMARY KEY (token_seq, hash)
  );
  CREATE INDEX token_search_lookup ON token_search (tenant_id, hash, token_seq);

  CREATE TABLE applications (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text NOT NULL,
    id text NOT NULL,
    name text NOT NULL,
    type text NOT NULL,
    permissions json NOT NULL,
    rules json NOT NULL,
    key_hash text NOT NULL,
    key_lookup text NOT NULL,
    created_by text,
    created_at bigint NOT NULL,
    modified_by text,
    modified_at bigint,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX applications_tenant_seq ON applications (tenant_id, seq);
  CREATE INDEX applications_key_lookup ON applications (key_lookup);

  CREATE TABLE formulas (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text NOT NULL,
    id text NOT NULL,
    name text NOT NULL,
    description text,
    code text NOT NULL,
    configuration json NOT NULL,
    request_parameters json NOT NULL,
    created_by text,
    created_at bigint NOT NULL,
    modified_by text,
    modified_at bigint,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX formulas_tenant_seq ON formulas (tenant_id, seq);

  CREATE TABLE reactors (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text NOT NULL,
    id text NOT NULL,
    name text NOT NULL,
    name_lower text NOT NULL,       -- lower-cased in JS (Unicode-aware, whatever the database locale)
    formula_id text NOT NULL,
    configuration json NOT NULL,
    application_id text,
    created_by text,
    created_at bigint NOT NULL,
    modified_by text,
    modified_at bigint,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX reactors_tenant_seq ON reactors (tenant_id, seq);
  CREATE INDEX reactors_tenant_formula ON reactors (tenant_id, formula_id);

  CREATE TABLE idempotency_keys (
    tenant_id text NOT NULL,
    application_id text NOT NULL,
    key text NOT NULL,
    request_hash text NOT NULL,
    state text NOT NULL CHECK (state IN ('in_flight', 'done')),
    status integer,
    body text,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    PRIMARY KEY (tenant_id, application_id, key)
  );

  CREATE TABLE audit_log (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text NOT NULL,
    actor text NOT NULL,
    operation text NOT NULL,
    resource_id text,
    outcome text NOT NULL CHECK (outcome IN ('success', 'failure')),
    detail text,
    at bigint NOT NULL
  );
  CREATE INDEX audit_log_tenant_seq ON audit_log (tenant_id, seq);
  -- Append-only: rows are never changed or removed (a later migration may add retention).
  CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'audit_log is append-only';
    END
  $$;
  CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
  CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
  `,
  /* 2: the sweep removes expired idempotency records */ `
  CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
  `,
  /*
   * 3: stored responses are encrypted, and withdrawn with the tokens they carry (as the SQLite
   * migration 3). Records written before held the response in clear: they are dropped (DROP TABLE
   * removes the table's files when the migration commits). The trigger functions run with the schema's search_path, fixed
   * when they are created, because the store's statements name the schema instead of setting it.
   */ `
  DROP TABLE idempotency_keys;
  CREATE TABLE idempotency_keys (
    tenant_id text NOT NULL,
    application_id text NOT NULL,
    key text NOT NULL,
    request_hash text NOT NULL,
    state text NOT NULL CHECK (state IN ('in_flight', 'done', 'withdrawn')),
    status integer,
    body bytea,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    withdraw_at bigint,
    PRIMARY KEY (tenant_id, application_id, key)
  );
  CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

  CREATE TABLE idempotency_tokens (
    tenant_id text NOT NULL,
    token_id text NOT NULL,
    application_id text NOT NULL,
    key text NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (tenant_id, token_id, application_id, key, created_at)
  );
  CREATE INDEX idempotency_tokens_record ON idempotency_tokens (tenant_id, application_id, key, created_at);

  CREATE FUNCTION idempotency_withdraw_token() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
      UPDATE idempotency_keys k SET state = 'withdrawn', status = NULL, body = NULL, withdraw_at = NULL
        FROM idempotency_tokens r
        WHERE r.tenant_id = OLD.tenant_id AND r.token_id = OLD.id AND k.state = 'done'
          AND k.tenant_id = r.tenant_id AND k.application_id = r.application_id AND k.key = r.key AND k.created_at = r.created_at;
      DELETE FROM idempotency_tokens WHERE tenant_id = OLD.tenant_id AND token_id = OLD.id;
      RETURN NULL;
    END
  $$;
  CREATE TRIGGER idempotency_withdraw_deleted_token AFTER DELETE ON tokens FOR EACH ROW EXECUTE FUNCTION idempotency_withdraw_token();
  CREATE TRIGGER idempotency_withdraw_cvc AFTER UPDATE OF cvc_purge_at ON tokens FOR EACH ROW
    WHEN (OLD.cvc_purge_at IS NOT NULL AND NEW.cvc_purge_at IS NULL) EXECUTE FUNCTION idempotency_withdraw_token();

  CREATE FUNCTION idempotency_drop_references() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
      DELETE FROM idempotency_tokens
        WHERE tenant_id = OLD.tenant_id AND application_id = OLD.application_id AND key = OLD.key AND created_at = OLD.created_at;
      RETURN NULL;
    END
  $$;
  CREATE TRIGGER idempotency_tokens_record_gone AFTER DELETE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION idempotency_drop_references();
  CREATE TRIGGER idempotency_tokens_record_reclaimed AFTER UPDATE OF created_at ON idempotency_keys FOR EACH ROW
    WHEN (OLD.created_at <> NEW.created_at) EXECUTE FUNCTION idempotency_drop_references();
  `,
  // 4: background jobs (src/jobs/job-queue.ts), claimed with FOR UPDATE SKIP LOCKED.
  `
  CREATE TABLE jobs (
    id text PRIMARY KEY,
    tenant_id text,
    kind text NOT NULL,
    key text UNIQUE,
    payload text NOT NULL,
    run_at bigint NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    lease_owner text,
    lease_expires_at bigint,
    created_at bigint NOT NULL,
    last_error text
  );
  CREATE INDEX jobs_due ON jobs (run_at);
  `,
  // 5: asynchronous reactor runs: args and results sealed with the tenant key, removed 24 h after they finish.
  `
  CREATE TABLE reactor_requests (
    tenant_id text NOT NULL,
    id text NOT NULL,
    reactor_id text NOT NULL,
    application_id text NOT NULL,
    status text NOT NULL,
    callback_url text,
    timeout_ms integer NOT NULL,
    args bytea NOT NULL,
    result bytea,
    error text,
    created_at bigint NOT NULL,
    started_at bigint,
    completed_at bigint,
    expires_at bigint,
    PRIMARY KEY (tenant_id, id)
  );
  CREATE INDEX reactor_requests_expiry ON reactor_requests (expires_at) WHERE expires_at IS NOT NULL;
  `,
];
