import pg from 'pg';
import type { PgPool, PgPoolClient, PgQueryConfig } from '../../src/postgres.js';
import { MIGRATIONS } from '../../src/storage/postgres/migrations.js';

/**
 * Statements of the PostgreSQL store that do not name a tenant, and why (docs/scaling.md, "Scaling
 * out"). Each pattern is matched against the statement with its schema removed.
 */
const EXCEPTIONS: readonly [RegExp, string][] = [
  [/^(BEGIN|COMMIT|ROLLBACK)\b/, 'transaction control'],
  [/^SELECT pg_advisory_xact_lock\(/, 'a lock whose key hashes the tenant with the rest'],
  [/to_regclass|pg_namespace|CREATE SCHEMA|SET LOCAL search_path|tokenvault_migrations/, 'migrations: one per schema'],
  [/\b(FROM|INTO|UPDATE) tenants\b/, 'the tenant table itself'],
  [/\b(FROM|INTO|UPDATE) jobs\b/, 'the background queue, claimed across tenants'],
  [/WHERE k?\.?key_lookup = \$1/, 'resolving an API or session key, which does not name its tenant'],
  [/(expires_at|cvc_purge_at|completed_at) <= \$1/, 'a sweep across tenants'],
];

/** A pg pool that records the text of every statement sent through it (for a store's `pool` option). */
export function recordingPool(connectionString: string, max: number): { pool: PgPool; seen: Set<string> } {
  const seen = new Set<string>();
  return { pool: observingPool(connectionString, max, (config) => void seen.add(config.text)), seen };
}

/** A pg pool that shows `observe` every statement's config (text, name, values) before sending it. */
export function observingPool(connectionString: string, max: number, observe: (config: PgQueryConfig) => void): PgPool {
  const inner = new pg.Pool({ connectionString, max });
  return {
    query: (config) => (observe(config), inner.query(config as pg.QueryConfig)) as never,
    connect: async () => {
      const client = await inner.connect();
      const wrapped: PgPoolClient = {
        query: (config) => (observe(config), client.query(config as pg.QueryConfig)) as never,
        release: (destroy) => client.release(destroy),
        on: (event, listener) => client.on(event, listener),
        removeListener: (event, listener) => client.removeListener(event, listener),
      };
      return wrapped;
    },
    end: () => inner.end(),
  };
}

/** The statements seen that neither mention tenant_id nor are a named exception (migrations left out). */
export function statementsWithoutTenant(seen: Iterable<string>): string[] {
  const migrations = new Set(MIGRATIONS);
  return [...seen]
    .filter((text) => !migrations.has(text))
    .map((text) => text.replace(/"[a-z0-9_]+"\./g, '').trim())
    .filter((text) => !/\btenant_id\b/.test(text) && !EXCEPTIONS.some(([pattern]) => pattern.test(text)));
}
