import type { MigrateOptions, MigrationOutcome, MigrationProgress } from '../store.js';
import type { PgExecutor, Queryable } from './pg-executor.js';
import { quoteSchema } from './postgres-options.js';
import { MIGRATIONS_1_TO_5 } from './migrations-1-5.js';
import { copyTokensLean, LEAN_TOKENS_MIGRATION, type MigrationStep } from './migration-lean-tokens.js';

/**
 * The schema as numbered migrations: entry i is version i + 1. Append only; never edit an entry that
 * has shipped. Versions 1-5 (with the index choices) are in migrations-1-5.ts. The SQL names no schema: it
 * runs with `search_path` set (locally, for its transaction) to the store's schema, so one text
 * serves every schema.
 */
export const MIGRATIONS: readonly string[] = Object.freeze([
  ...MIGRATIONS_1_TO_5,
  /* 6: reactors with inline code: a reactor runs either its formula's code or its own */ `
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
  /* 9: credentials generations: a session ends when its creator's or authorizer's keys are regenerated or deleted */ `
  ALTER TABLE applications ADD COLUMN credentials_generation integer NOT NULL DEFAULT 0;
  ALTER TABLE sessions ADD COLUMN creator_generation integer NOT NULL DEFAULT 0;
  ALTER TABLE sessions ADD COLUMN authorizer_generation integer;
  -- Sessions authorized before this migration were authorized at generation 0, where every application starts.
  UPDATE sessions SET authorizer_generation = 0 WHERE authorized_by IS NOT NULL;
  `,
  /* 10: the grants a non-administrator bound a reactor or made a key with (docs/authority.md); null before */ `
  ALTER TABLE reactors ADD COLUMN bound_grants json;
  ALTER TABLE application_keys ADD COLUMN grants json;
  `,
  /* 11: a job keeps its own bound on attempts (the queue's claim counts attempts; a recurring job's run resets them) */ `
  ALTER TABLE jobs ADD COLUMN max_attempts integer NOT NULL DEFAULT 10;
  `,
  /* 12: every primary and unique key leads with tenant_id, so tables can be distributed by tenant (docs/scaling.md) */ `
  -- seq stays: creation order for paging, unique within a tenant. The (tenant_id, id) keys that
  -- were UNIQUE become the primary keys; the index rows follow their token by (tenant_id, seq).
  ALTER TABLE token_metadata DROP CONSTRAINT token_metadata_token_seq_fkey;
  ALTER TABLE token_search DROP CONSTRAINT token_search_token_seq_fkey;
  DROP INDEX tokens_tenant_seq;
  ALTER TABLE tokens DROP CONSTRAINT tokens_pkey, DROP CONSTRAINT tokens_tenant_id_id_key,
    ADD PRIMARY KEY (tenant_id, id), ADD CONSTRAINT tokens_tenant_seq UNIQUE (tenant_id, seq);
  ALTER TABLE token_metadata DROP CONSTRAINT token_metadata_pkey, ADD PRIMARY KEY (tenant_id, token_seq, pair),
    ADD FOREIGN KEY (tenant_id, token_seq) REFERENCES tokens (tenant_id, seq) ON DELETE CASCADE;
  ALTER TABLE token_search DROP CONSTRAINT token_search_pkey, ADD PRIMARY KEY (tenant_id, token_seq, hash),
    ADD FOREIGN KEY (tenant_id, token_seq) REFERENCES tokens (tenant_id, seq) ON DELETE CASCADE;
  ALTER TABLE applications DROP CONSTRAINT applications_pkey, DROP CONSTRAINT applications_tenant_id_id_key, ADD PRIMARY KEY (tenant_id, id);
  ALTER TABLE application_keys DROP CONSTRAINT application_keys_pkey, DROP CONSTRAINT application_keys_tenant_id_application_id_id_key,
    ADD PRIMARY KEY (tenant_id, application_id, id);
  ALTER TABLE formulas DROP CONSTRAINT formulas_pkey, DROP CONSTRAINT formulas_tenant_id_id_key, ADD PRIMARY KEY (tenant_id, id);
  ALTER TABLE reactors DROP CONSTRAINT reactors_pkey, DROP CONSTRAINT reactors_tenant_id_id_key, ADD PRIMARY KEY (tenant_id, id);
  ALTER TABLE webhooks DROP CONSTRAINT webhooks_pkey, DROP CONSTRAINT webhooks_tenant_id_id_key, ADD PRIMARY KEY (tenant_id, id);
  ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pkey, DROP CONSTRAINT webhook_deliveries_tenant_id_id_key,
    ADD PRIMARY KEY (tenant_id, id), ADD CONSTRAINT webhook_deliveries_tenant_seq UNIQUE (tenant_id, seq);
  DROP INDEX audit_log_tenant_seq;
  ALTER TABLE audit_log DROP CONSTRAINT audit_log_pkey, ADD PRIMARY KEY (tenant_id, seq);
  `,
  /* 13: token intents (docs/token-intents.md): short-lived data, sealed like token data, until converted */ `
  CREATE TABLE token_intents (
    tenant_id text NOT NULL,
    id text NOT NULL,
    type text NOT NULL,
    sealed bytea NOT NULL,
    fingerprint text,
    created_by text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    PRIMARY KEY (tenant_id, id)
  );
  CREATE INDEX token_intents_expires_at ON token_intents (expires_at);
  `,
  /* 14: the page origins a public application's browser elements may be embedded in (docs/elements.md); [] is any */ `
  ALTER TABLE applications ADD COLUMN allowed_origins json NOT NULL DEFAULT '[]';
  `,
  /* 15: pre-configured proxies (docs/proxies.md): configuration sealed, key hashed */ `
  CREATE TABLE proxies (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    tenant_id text NOT NULL,
    id text NOT NULL,
    name text NOT NULL,
    name_lower text NOT NULL,       -- lower-cased in JS (Unicode-aware, whatever the database locale)
    destination_url text NOT NULL,
    request_transforms json NOT NULL,
    response_transforms json NOT NULL,
    configuration bytea,            -- sealed with the tenant's data key
    application_id text,
    bound_grants json,
    require_auth boolean NOT NULL,
    key_hash text NOT NULL,
    key_lookup text NOT NULL,
    created_by text,
    created_at bigint NOT NULL,
    modified_by text,
    modified_at bigint,
    PRIMARY KEY (tenant_id, seq),
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX proxies_key_lookup ON proxies (key_lookup);
  `,
  /* 16: the application whose credentials a proxy's key stands on (docs/proxies.md, When a proxy's key ends) */ `
  ALTER TABLE proxies ADD COLUMN maker_application_id text;
  ALTER TABLE proxies ADD COLUMN maker_generation integer;
  -- A proxy made before by an application other than a management one answers to its maker's credentials as they are now.
  UPDATE proxies p SET maker_application_id = p.created_by, maker_generation = a.credentials_generation
    FROM applications a WHERE a.tenant_id = p.tenant_id AND a.id = p.created_by AND a.type <> 'management';
  `,
  /* 17: the audit chain (docs/audit.md): each entry's position, hash and MAC, and each tenant's head */ `
  ALTER TABLE audit_log ADD COLUMN chain_index bigint, ADD COLUMN chain_hash bytea, ADD COLUMN chain_mac bytea;
  CREATE UNIQUE INDEX audit_log_chain ON audit_log (tenant_id, chain_index) WHERE chain_index IS NOT NULL;
  CREATE INDEX audit_log_unsealed ON audit_log (tenant_id, seq) WHERE chain_index IS NULL;
  CREATE TABLE audit_heads (
    tenant_id text PRIMARY KEY,
    chain_index bigint NOT NULL,
    chain_hash bytea,
    legacy_through bigint NOT NULL
  );
  -- The entries written before the chain are its unverified prefix.
  INSERT INTO audit_heads (tenant_id, chain_index, chain_hash, legacy_through) SELECT tenant_id, 0, NULL, max(seq) FROM audit_log GROUP BY tenant_id;
  -- A guard against mistakes, not the protection (the chain's MACs are): sealing sets the chain
  -- columns of an unsealed entry once, retention (which sets tokenvault.audit_prune for its
  -- transaction) removes entries, nothing else changes a row.
  DROP TRIGGER audit_log_no_update ON audit_log;
  CREATE FUNCTION audit_log_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        IF current_setting('tokenvault.audit_prune', true) = 'on' THEN RETURN OLD; END IF;
        RAISE EXCEPTION 'audit_log entries are removed by retention only';
      END IF;
      IF OLD.chain_index IS NULL AND NEW.chain_index IS NOT NULL AND NEW.chain_hash IS NOT NULL
        AND (NEW.seq, NEW.tenant_id, NEW.actor, NEW.operation, NEW.resource_id, NEW.outcome, NEW.detail, NEW.at)
          IS NOT DISTINCT FROM (OLD.seq, OLD.tenant_id, OLD.actor, OLD.operation, OLD.resource_id, OLD.outcome, OLD.detail, OLD.at) THEN
        RETURN NEW;
      END IF;
      RAISE EXCEPTION 'audit_log entries are sealed once and never changed';
    END
  $$;
  CREATE TRIGGER audit_log_guard BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_guard();
  `,
  /* 18: the lean token layout (migration-lean-tokens.ts): the copy runs in resumable batches first */ LEAN_TOKENS_MIGRATION,
]);

/**
 * Work a migration needs done before its own transaction, in batches that each commit (see
 * Store.migrate): keyed by the migration's text, so the work follows the migration when the list
 * is renumbered.
 */
const BATCHED_WORK: ReadonlyMap<string, (step: MigrationStep, version: number, report: (progress: MigrationProgress) => void, batch?: number) => Promise<void>> = new Map([
  [LEAN_TOKENS_MIGRATION, copyTokensLean],
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
 * others wait, then find the work done. The migrations run in one transaction (PostgreSQL DDL is
 * transactional), so a failing migration leaves the schema as it was; except that a migration with
 * batched work (BATCHED_WORK) starts a transaction of its own, after its batches, each of which
 * commits under the same lock and records how far it got (resumable, reported to
 * `options.onProgress`). A new schema holds no rows: its batched work runs inside the one
 * transaction.
 */
export async function runMigrations(db: PgExecutor, schema: string, migrations: readonly string[] = MIGRATIONS, options: MigrateOptions = {}): Promise<MigrationOutcome> {
  const before = await appliedVersion(db, schema);
  if (before >= migrations.length) return { applied: [], version: before };
  const report = options.onProgress ?? (() => undefined);
  const applied: number[] = [];
  let version = before;
  let from = before;
  while (from < migrations.length) {
    // This run: from the next version up to (not including) the next migration with batched work;
    // on a new schema, every version.
    let to = from + 1;
    while (to < migrations.length && (before === 0 || !BATCHED_WORK.has(migrations[to]!))) to++;
    const work = BATCHED_WORK.get(migrations[from]!);
    if (work !== undefined && before > 0) {
      const step: MigrationStep = (fn) => db.transaction(async (tx) => fn(await lockedSchema(tx, schema)), 'migration');
      if ((await appliedVersion(db, schema)) < from + 1) await work(step, from + 1, report, options.batchSize);
    }
    const outcome = await db.transaction(async (tx) => {
      await lockedSchema(tx, schema);
      await tx.query(`CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
      const current = (await tx.query(`SELECT coalesce(max(version), 0) AS version FROM ${MIGRATIONS_TABLE}`)).rows[0]?.['version'] as number;
      const done: number[] = [];
      for (let next = current + 1; next <= to; next++) {
        // On a new schema the batched work has nothing to copy: it runs here, in the one transaction.
        if (before === 0) await BATCHED_WORK.get(migrations[next - 1]!)?.((fn) => fn(tx), next, report, options.batchSize);
        await tx.query(migrations[next - 1]!);
        await tx.query(`INSERT INTO ${MIGRATIONS_TABLE} (version) VALUES ($1)`, [next]);
        done.push(next);
      }
      return { done, version: Math.max(current, to) };
      // Its own bounds (migrationTimeoutMs, none by default): DDL may lock and rewrite a large table,
      // and instances starting together wait here for the one migrating.
    }, 'migration');
    applied.push(...outcome.done);
    version = outcome.version;
    from = to;
  }
  return { applied, version };
}

/** Takes the schema's migration lock in `tx`, creates the schema when missing, and sets the transaction's search_path to it. */
async function lockedSchema(tx: Queryable, schema: string): Promise<Queryable> {
  await tx.query('SELECT pg_advisory_xact_lock($1::int4, hashtext($2))', [MIGRATION_LOCK_CLASS, schema]);
  // Checked before creating: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the
  // database even when the schema exists.
  const exists = await tx.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  if (exists.rows.length === 0) await tx.query(`CREATE SCHEMA ${quoteSchema(schema)}`);
  await tx.query(`SET LOCAL search_path TO ${quoteSchema(schema)}`);
  return tx;
}
