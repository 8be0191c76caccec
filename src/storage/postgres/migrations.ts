import type { PgExecutor } from './pg-executor.js';
import { quoteSchema } from './postgres-options.js';

/**
 * The PostgreSQL schema as numbered migrations: entry i is version i + 1. Append only; never edit
 * an entry that has shipped. The SQL names no schema: it runs with `search_path` set (locally, for
 * its transaction) to the store's schema, so one text serves every schema.
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
export const MIGRATIONS: readonly string[] = Object.freeze([
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
  /* 6: reactors with inline code (issue 12): a reactor runs either its formula's code or its own */ `
  ALTER TABLE reactors ADD COLUMN code text;
  ALTER TABLE reactors ALTER COLUMN formula_id DROP NOT NULL;
  ALTER TABLE reactors ADD CONSTRAINT reactors_formula_or_code CHECK ((formula_id IS NULL) <> (code IS NULL));
  `,
  /* 7: application keys and sessions: several keys per application, keys moved out of applications */ `
  CREATE TABLE application_keys (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text NOT NULL,
    application_id text NOT NULL,
    id text NOT NULL,
    key_hash text NOT NULL,
    key_lookup text NOT NULL,
    created_by text,
    created_at bigint NOT NULL,
    UNIQUE (tenant_id, application_id, id)
  );
  CREATE INDEX application_keys_lookup ON application_keys (key_lookup);
  INSERT INTO application_keys (tenant_id, application_id, id, key_hash, key_lookup, created_by, created_at)
    SELECT tenant_id, id, gen_random_uuid()::text, key_hash, key_lookup, created_by, coalesce(modified_at, created_at) FROM applications ORDER BY seq;
  DROP INDEX applications_key_lookup;
  ALTER TABLE applications DROP COLUMN key_hash, DROP COLUMN key_lookup;

  CREATE TABLE sessions (
    tenant_id text NOT NULL,
    id text NOT NULL,
    application_id text NOT NULL,
    key_hash text NOT NULL,
    key_lookup text NOT NULL,
    nonce_hash text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    authorized_by text,
    authorized_at bigint,
    grants json,
    PRIMARY KEY (tenant_id, id)
  );
  CREATE INDEX sessions_key_lookup ON sessions (key_lookup);
  CREATE UNIQUE INDEX sessions_nonce ON sessions (tenant_id, nonce_hash);
  CREATE INDEX sessions_expires_at ON sessions (expires_at);
  CREATE INDEX sessions_application ON sessions (tenant_id, application_id);
  CREATE INDEX sessions_authorized_by ON sessions (tenant_id, authorized_by) WHERE authorized_by IS NOT NULL;

  -- An application's credentials go with it, in the deleting transaction.
  CREATE FUNCTION application_credentials_gone() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
  BEGIN
    DELETE FROM application_keys WHERE tenant_id = OLD.tenant_id AND application_id = OLD.id;
    DELETE FROM sessions WHERE tenant_id = OLD.tenant_id AND (application_id = OLD.id OR authorized_by = OLD.id);
    RETURN NULL;
  END;
  $$;
  CREATE TRIGGER application_credentials_gone AFTER DELETE ON applications FOR EACH ROW EXECUTE FUNCTION application_credentials_gone();
  `,
  /* 8: webhooks: event webhooks, the per-tenant signing secret (sealed), deliveries (payload sealed) */ `
  CREATE TABLE webhooks (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text NOT NULL,
    id text NOT NULL,
    name text NOT NULL,
    url text NOT NULL,
    events json NOT NULL,
    created_by text,
    created_at bigint NOT NULL,
    modified_by text,
    modified_at bigint,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX webhooks_tenant_seq ON webhooks (tenant_id, seq);

  CREATE TABLE webhook_secrets (
    tenant_id text PRIMARY KEY,
    sealed bytea NOT NULL,
    version integer NOT NULL,
    updated_at bigint NOT NULL
  );

  CREATE TABLE webhook_deliveries (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text NOT NULL,
    id text NOT NULL,
    webhook_id text,
    request_id text,
    event_type text NOT NULL,
    url text,
    payload bytea NOT NULL,
    status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts integer NOT NULL,
    history json NOT NULL,
    next_attempt_at bigint,
    created_at bigint NOT NULL,
    completed_at bigint,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (tenant_id, webhook_id, seq);
  CREATE INDEX webhook_deliveries_request ON webhook_deliveries (tenant_id, request_id) WHERE request_id IS NOT NULL;
  CREATE INDEX webhook_deliveries_completed ON webhook_deliveries (completed_at) WHERE completed_at IS NOT NULL;
  `,
]);

/** The table recording applied versions, in the store's schema. */
export const MIGRATIONS_TABLE = 'tokenvault_migrations';

/**
 * Advisory lock class (the first key of the two-key form, whose key space is separate from the
 * one-bigint form) for migrations; the second key is a hash of the schema name.
 */
export const MIGRATION_LOCK_CLASS = 0x74760001;

/** The highest version recorded in the schema, 0 when the schema or the table does not exist yet. */
export async function appliedVersion(db: PgExecutor, schema: string): Promise<number> {
  const table = `${quoteSchema(schema)}.${MIGRATIONS_TABLE}`;
  const present = await db.query('SELECT to_regclass($1) IS NOT NULL AS present', [table]);
  if (present.rows[0]?.['present'] !== true) return 0;
  const current = await db.query(`SELECT coalesce(max(version), 0) AS version FROM ${table}`);
  return current.rows[0]?.['version'] as number;
}

/**
 * Applies the migrations not yet recorded. Up to date, it only reads the version (so a role
 * without DDL rights can run a migrated database). Otherwise it takes a transaction-scoped
 * advisory lock for the schema, so instances starting together apply each migration once: the
 * others wait, then find the work done. Everything runs in one transaction (PostgreSQL DDL is
 * transactional), so a failing migration leaves the schema as it was.
 */
export async function runMigrations(db: PgExecutor, schema: string, migrations: readonly string[] = MIGRATIONS): Promise<void> {
  if ((await appliedVersion(db, schema)) >= migrations.length) return;
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1::int4, hashtext($2))', [MIGRATION_LOCK_CLASS, schema]);
    // Checked before creating: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the
    // database even when the schema exists.
    const exists = await tx.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rows.length === 0) await tx.query(`CREATE SCHEMA ${quoteSchema(schema)}`);
    await tx.query(`SET LOCAL search_path TO ${quoteSchema(schema)}`);
    await tx.query(`CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const current = (await tx.query(`SELECT coalesce(max(version), 0) AS version FROM ${MIGRATIONS_TABLE}`)).rows[0]?.['version'] as number;
    for (let version = current + 1; version <= migrations.length; version++) {
      await tx.query(migrations[version - 1]!);
      await tx.query(`INSERT INTO ${MIGRATIONS_TABLE} (version) VALUES ($1)`, [version]);
    }
  });
}
