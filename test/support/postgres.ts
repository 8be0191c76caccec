import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DESELECTED_REASON, selected } from './store-selection.js';

/**
 * The PostgreSQL server the PostgreSQL tests run against (`postgres://postgres@127.0.0.1:5432/test`
 * locally; CI sets it when the server answers). Unset, or PostgreSQL left out of
 * TOKENVAULT_TEST_STORES: those tests are skipped, with this reason.
 */
export const PG_URL: string | undefined = (selected('postgres') && process.env.TOKENVAULT_TEST_PG_URL) || undefined;
export const PG_SKIP_REASON = selected('postgres') ? 'skipped: set TOKENVAULT_TEST_PG_URL to run' : DESELECTED_REASON;

/**
 * A PgBouncer in transaction pooling mode in front of that server (docs/scaling.md), which the
 * multi-instance tests also run through: `.ci/run` starts one with scripts/ci-pgbouncer.sh and sets
 * it. Unset: those runs are skipped, with this reason.
 */
export const PGBOUNCER_URL: string | undefined = (PG_URL && process.env.TOKENVAULT_TEST_PGBOUNCER_URL) || undefined;
export const PGBOUNCER_SKIP_REASON = 'skipped: run scripts/ci-pgbouncer.sh DIR and set TOKENVAULT_TEST_PGBOUNCER_URL to what it prints';

/**
 * Where several instances reach the one PostgreSQL database: directly, and through the pooler
 * when one is set. Schemas are created through either and inspected or dropped through `adminPool`.
 */
export const PG_ROUTES: readonly { name: 'postgres' | 'pgbouncer'; url: string }[] = [
  ...(PG_URL === undefined ? [] : [{ name: 'postgres' as const, url: PG_URL }]),
  ...(PGBOUNCER_URL === undefined ? [] : [{ name: 'pgbouncer' as const, url: PGBOUNCER_URL }]),
];

/** A schema name no other test (or concurrent test run) uses; the store creates it on migrate(). */
export function freshSchema(label = 'test'): string {
  return `tv_${label}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

let admin: pg.Pool | undefined;

/** A small pool for the tests' own SQL (inspection, cleanup), ended by `endAdmin`. */
export function adminPool(): pg.Pool {
  if (PG_URL === undefined) throw new Error('TOKENVAULT_TEST_PG_URL is not set');
  admin ??= new pg.Pool({ connectionString: PG_URL, max: 3 });
  return admin;
}

export async function dropSchema(schema: string): Promise<void> {
  await adminPool().query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

export async function endAdmin(): Promise<void> {
  const pool = admin;
  admin = undefined;
  await pool?.end();
}
