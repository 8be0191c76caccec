import type { MigrateOptions, MigrationOutcome, MigrationProgress } from '../store.js';
import type { BetterSqlite3Database } from './sqlite-options.js';
import { MIGRATIONS_1_TO_5 } from './migrations-1-5.js';
import { copyTokensLean, LEAN_TOKENS_MIGRATION } from './migration-lean-tokens.js';

/**
 * The schema as numbered migrations: entry i is version i + 1. Append only; never edit an entry that
 * has shipped. Versions 1-5 (with the index choices) are in migrations-1-5.ts. Each runs in its own
 * transaction and is recorded in `schema_migrations`.
 */
export const MIGRATIONS: readonly string[] = Object.freeze([
  ...MIGRATIONS_1_TO_5,
  /* 6: reactors with inline code: a reactor runs either its formula's code or its own */ `
  -- SQLite cannot drop formula_id's NOT NULL without rebuilding the table (and dropping columns
  -- other migrations may add); the empty string stands for "no formula" (formula ids are never
  -- empty), mapped to null by the reactors area (areas/reactors.ts).
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
  /* 9: credentials generations: a session ends when its creator's or authorizer's keys are regenerated or deleted */ `
  ALTER TABLE applications ADD COLUMN credentials_generation INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE sessions ADD COLUMN creator_generation INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE sessions ADD COLUMN authorizer_generation INTEGER;
  -- Sessions authorized before this migration were authorized at generation 0, where every application starts.
  UPDATE sessions SET authorizer_generation = 0 WHERE authorized_by IS NOT NULL;
  `,
  /* 10: the grants a non-administrator bound a reactor or made a key with (docs/authority.md); null before */ `
  ALTER TABLE reactors ADD COLUMN bound_grants TEXT;
  ALTER TABLE application_keys ADD COLUMN grants TEXT;
  `,
  /* 11: a job keeps its own bound on attempts (the queue's claim counts attempts; a recurring job's run resets them) */ `
  ALTER TABLE jobs ADD COLUMN max_attempts INTEGER NOT NULL DEFAULT 10;
  `,
  /* 12: token intents (docs/token-intents.md): short-lived data, sealed like token data, until converted */ `
  CREATE TABLE token_intents (
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    type TEXT NOT NULL,
    sealed BLOB NOT NULL,
    fingerprint TEXT,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id)
  ) WITHOUT ROWID;
  CREATE INDEX token_intents_expires_at ON token_intents (expires_at);
  `,
  /* 13: the page origins a public application's browser elements may be embedded in (docs/elements.md); [] is any */ `
  ALTER TABLE applications ADD COLUMN allowed_origins TEXT NOT NULL DEFAULT '[]';
  `,
  /* 14: pre-configured proxies (docs/proxies.md): configuration sealed, key hashed */ `
  CREATE TABLE proxies (
    seq INTEGER PRIMARY KEY,        -- creation order
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    name_lower TEXT NOT NULL,
    destination_url TEXT NOT NULL,
    request_transforms TEXT NOT NULL,
    response_transforms TEXT NOT NULL,
    configuration BLOB,             -- sealed with the tenant's data key
    application_id TEXT,
    bound_grants TEXT,
    require_auth INTEGER NOT NULL,
    key_hash TEXT NOT NULL,
    key_lookup TEXT NOT NULL,
    created_by TEXT,
    created_at INTEGER NOT NULL,
    modified_by TEXT,
    modified_at INTEGER,
    UNIQUE (tenant_id, id)
  );
  CREATE INDEX proxies_tenant_seq ON proxies (tenant_id, seq);
  CREATE INDEX proxies_key_lookup ON proxies (key_lookup);
  `,
  /* 15: the application whose credentials a proxy's key stands on (docs/proxies.md, When a proxy's key ends) */ `
  ALTER TABLE proxies ADD COLUMN maker_application_id TEXT;
  ALTER TABLE proxies ADD COLUMN maker_generation INTEGER;
  -- A proxy made before by an application other than a management one answers to its maker's credentials as they are now.
  UPDATE proxies SET maker_application_id = created_by,
    maker_generation = (SELECT a.credentials_generation FROM applications a WHERE a.tenant_id = proxies.tenant_id AND a.id = proxies.created_by)
    WHERE EXISTS (SELECT 1 FROM applications a WHERE a.tenant_id = proxies.tenant_id AND a.id = proxies.created_by AND a.type <> 'management');
  `,
  /* 16: the audit chain (docs/audit.md): each entry's position, hash and MAC, and each tenant's head */ `
  ALTER TABLE audit_log ADD COLUMN chain_index INTEGER;
  ALTER TABLE audit_log ADD COLUMN chain_hash BLOB;
  ALTER TABLE audit_log ADD COLUMN chain_mac BLOB;
  CREATE UNIQUE INDEX audit_log_chain ON audit_log (tenant_id, chain_index) WHERE chain_index IS NOT NULL;
  CREATE INDEX audit_log_unsealed ON audit_log (tenant_id, seq) WHERE chain_index IS NULL;
  CREATE TABLE audit_heads (
    tenant_id TEXT PRIMARY KEY,
    chain_index INTEGER NOT NULL,
    chain_hash BLOB,
    legacy_through INTEGER NOT NULL
  ) WITHOUT ROWID;
  -- The entries written before the chain are its unverified prefix.
  INSERT INTO audit_heads (tenant_id, chain_index, chain_hash, legacy_through) SELECT tenant_id, 0, NULL, max(seq) FROM audit_log GROUP BY tenant_id;
  -- Retention names the tenant whose entries it removes here, inside its transaction.
  CREATE TABLE audit_prune_permits (tenant_id TEXT PRIMARY KEY) WITHOUT ROWID;
  -- A guard against mistakes, not the protection (the chain's MACs are): sealing sets the chain
  -- columns of an unsealed entry once, retention removes entries, nothing else changes a row.
  DROP TRIGGER audit_log_no_update;
  DROP TRIGGER audit_log_no_delete;
  CREATE TRIGGER audit_log_seal_only BEFORE UPDATE ON audit_log
    WHEN OLD.chain_index IS NOT NULL OR NEW.chain_index IS NULL OR NEW.chain_hash IS NULL OR NEW.seq IS NOT OLD.seq OR NEW.tenant_id IS NOT OLD.tenant_id
      OR NEW.actor IS NOT OLD.actor OR NEW.operation IS NOT OLD.operation OR NEW.resource_id IS NOT OLD.resource_id
      OR NEW.outcome IS NOT OLD.outcome OR NEW.detail IS NOT OLD.detail OR NEW.at IS NOT OLD.at
    BEGIN SELECT RAISE(ABORT, 'audit_log entries are sealed once and never changed'); END;
  CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
    WHEN NOT EXISTS (SELECT 1 FROM audit_prune_permits p WHERE p.tenant_id = OLD.tenant_id)
    BEGIN SELECT RAISE(ABORT, 'audit_log entries are removed by retention only'); END;
  `,
  /* 17: the lean token layout (migration-lean-tokens.ts): the copy runs in resumable batches first */ LEAN_TOKENS_MIGRATION,
  /* 18: tenant_keys names the tenant tenant_id, as PostgreSQL's does, so token statements are written once (areas/tokens.ts) */ `
  -- A change of the schema only (the triggers that read the column are rewritten with it): no row is copied.
  ALTER TABLE tenant_keys RENAME COLUMN id TO tenant_id;
  `,
]);

/**
 * Work a migration needs done before its own transaction, in batches that each commit (see
 * Store.migrate): keyed by the migration's text, so the work follows the migration when the list
 * is renumbered.
 */
const BATCHED_WORK: ReadonlyMap<string, (db: BetterSqlite3Database, version: number, report: (progress: MigrationProgress) => void, batch?: number) => void> = new Map([
  [LEAN_TOKENS_MIGRATION, copyTokensLean],
]);

/**
 * Applies the migrations not yet recorded, each in its own BEGIN IMMEDIATE transaction that
 * re-reads the applied version first, so two processes opening the same file do not both apply one.
 */
export function runMigrations(db: BetterSqlite3Database, migrations: readonly string[] = MIGRATIONS, options: MigrateOptions = {}): MigrationOutcome {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const current = db.prepare('SELECT coalesce(max(version), 0) AS version FROM schema_migrations');
  // The migration time is SQLite's clock: it is bookkeeping, not domain time.
  const record = db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, CAST(unixepoch('subsec') * 1000 AS INTEGER))");
  const apply = db.transaction((version: number, sql: string): boolean => {
    if ((current.get() as { version: number }).version >= version) return false; // another process did
    db.exec(sql);
    record.run(version);
    return true;
  });
  const applied: number[] = [];
  const report = options.onProgress ?? (() => undefined);
  migrations.forEach((sql, index) => {
    if ((current.get() as { version: number }).version >= index + 1) return;
    BATCHED_WORK.get(sql)?.(db, index + 1, report, options.batchSize);
    if (apply.immediate(index + 1, sql)) applied.push(index + 1);
  });
  // What a migration removed (migration 3: responses stored in the clear) must leave the main file
  // now, not at some later checkpoint: copy the WAL (holding the zeroed pages) back and empty it.
  if (applied.length > 0 && (db.pragma('journal_mode', { simple: true }) as string) === 'wal') db.pragma('wal_checkpoint(TRUNCATE)');
  return { applied, version: (current.get() as { version: number }).version };
}
