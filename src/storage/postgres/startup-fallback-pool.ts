import type pg from 'pg';
import type { PgPool, PgPoolClient, PgQueryConfig, PgQueryResult } from './postgres-options.js';

/**
 * A pooler's refusal of a startup parameter it does not know. PgBouncer 1.18 answers
 * `unsupported startup parameter: statement_timeout` (08P01) to any but a few (application_name,
 * client_encoding…) unless listed in its ignore_startup_parameters (then it drops them unapplied).
 */
export function isRefusedStartupParameter(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === '08P01' && typeof e.message === 'string' && /unsupported startup parameter/i.test(e.message);
}

/**
 * The pool the store creates: its connections carry the timeouts as startup parameters (the
 * session's defaults, so lone statements are bounded by the server too), until a pooler refuses
 * them. Then the pool is replaced, for good, by one that sends none, and the work runs again there:
 * nothing had run, the connection was refused at its start. From then on the bounds are the
 * `SET LOCAL` of each transaction and the store's own backstop (docs/storage.md, "Timeouts").
 */
export class StartupFallbackPool implements PgPool {
  readonly #make: (startup: boolean) => pg.Pool;
  #pool: pg.Pool;
  #startup: boolean;
  /** Pools given up: not ended before close(), since a call queued in one would never be answered. */
  readonly #retired: pg.Pool[] = [];

  /** `make(startup)`: a pg Pool whose connections send the startup parameters, or none. */
  constructor(make: (startup: boolean) => pg.Pool, startup: boolean) {
    this.#make = make;
    this.#startup = startup;
    this.#pool = make(startup);
  }

  /** Whether connections still carry the startup parameters (false once a pooler refused them). */
  get startupParameters(): boolean {
    return this.#startup;
  }

  async query(config: PgQueryConfig): Promise<PgQueryResult> {
    const pool = this.#pool;
    try {
      return (await pool.query(config as pg.QueryConfig)) as PgQueryResult;
    } catch (error) {
      if (!this.#refused(pool, error)) throw error;
      return this.query(config);
    }
  }

  async connect(): Promise<PgPoolClient> {
    const pool = this.#pool;
    try {
      return await pool.connect();
    } catch (error) {
      if (!this.#refused(pool, error)) throw error;
      return this.connect();
    }
  }

  async end(): Promise<void> {
    await Promise.all([this.#pool, ...this.#retired].map((pool) => pool.end()));
  }

  /** Whether `pool` refused the parameters, replacing it when it is still the current one. */
  #refused(pool: pg.Pool, error: unknown): boolean {
    if (!isRefusedStartupParameter(error)) return false;
    if (pool !== this.#pool) return true;
    // Refused without any startup parameter of ours: another cause; reported as it is.
    if (!this.#startup) return false;
    this.#startup = false;
    this.#retired.push(pool);
    this.#pool = this.#make(false);
    return true;
  }
}
