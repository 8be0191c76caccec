import type { JobRecord } from '../store.js';
import { checkLimit } from '../limit.js';
import type { Queryable } from './pg-executor.js';

const COLUMNS = 'id, tenant_id, kind, key, payload, run_at, attempts, lease_owner, lease_expires_at, created_at, last_error, max_attempts';

type Row = Record<string, unknown>;

/**
 * The INSERT of one job, its parameters numbered from `$first`: alone, or after a data-modifying
 * WITH that stores what the job works on, so both are one statement (atomic, one round trip).
 */
export function jobInsert(s: string, first: number): string {
  const params = COLUMNS.split(', ').map((_, i) => `$${first + i}`);
  return `INSERT INTO ${s}.jobs (${COLUMNS}) VALUES (${params.join(', ')}) ON CONFLICT DO NOTHING`;
}

/** The parameters of jobInsert, in its order. */
export function jobParams(job: JobRecord): unknown[] {
  const { id, tenantId, kind, key, payload, runAt, attempts, leaseOwner, leaseExpiresAt, createdAt, lastError, maxAttempts } = job;
  return [id, tenantId, kind, key, payload, runAt, attempts, leaseOwner, leaseExpiresAt, createdAt, lastError, maxAttempts];
}

const toJob = (row: Row): JobRecord => ({
  id: row['id'] as string,
  tenantId: row['tenant_id'] as string | null,
  kind: row['kind'] as string,
  key: row['key'] as string | null,
  payload: row['payload'] as string,
  runAt: row['run_at'] as number,
  attempts: row['attempts'] as number,
  leaseOwner: row['lease_owner'] as string | null,
  leaseExpiresAt: row['lease_expires_at'] as number | null,
  createdAt: row['created_at'] as number,
  lastError: row['last_error'] as string | null,
  maxAttempts: row['max_attempts'] as number,
});

/** The PostgreSQL store's job operations (Store, "background jobs"); `s` is the quoted schema. */
export class PostgresJobs {
  readonly #db: Queryable;
  readonly #sql: {
    insert: string;
    schedule: string;
    claim: string;
    renew: string;
    finish: string;
    reschedule: string;
    rescheduleReset: string;
    countDue: string;
  };

  constructor(db: Queryable, s: string) {
    this.#db = db;
    const due = 'run_at <= $1 AND (lease_owner IS NULL OR lease_expires_at <= $1)';
    this.#sql = {
      insert: jobInsert(s, 1),
      // The earlier runAt wins: a clock stepped back must not leave the stored, later one in place.
      schedule: `${jobInsert(s, 1).replace(/ ON CONFLICT DO NOTHING$/, '')} ON CONFLICT (key) DO UPDATE SET run_at = LEAST(${s}.jobs.run_at, EXCLUDED.run_at)`,
      // SKIP LOCKED: concurrent claimers (other instances) pass over rows another claim is taking,
      // so each job goes to one of them and none waits on another.
      claim:
        `UPDATE ${s}.jobs j SET lease_owner = $2, lease_expires_at = $3, attempts = j.attempts + 1 ` +
        `FROM (SELECT id FROM ${s}.jobs WHERE ${due} AND kind = ANY($5::text[]) ORDER BY run_at, created_at LIMIT $4 FOR UPDATE SKIP LOCKED) due ` +
        `WHERE j.id = due.id RETURNING ${COLUMNS.split(', ')
          .map((c) => `j.${c}`)
          .join(', ')}`,
      renew: `UPDATE ${s}.jobs SET lease_expires_at = $3 WHERE id = $1 AND lease_owner = $2`,
      finish: `DELETE FROM ${s}.jobs WHERE id = $1 AND lease_owner = $2`,
      reschedule: `UPDATE ${s}.jobs SET lease_owner = NULL, lease_expires_at = NULL, run_at = $3, last_error = $4 WHERE id = $1 AND lease_owner = $2`,
      rescheduleReset: `UPDATE ${s}.jobs SET lease_owner = NULL, lease_expires_at = NULL, run_at = $3, last_error = $4, attempts = 0 WHERE id = $1 AND lease_owner = $2`,
      countDue: `SELECT count(*)::int AS n FROM ${s}.jobs WHERE ${due}`,
    };
  }

  async enqueueJob(job: JobRecord): Promise<boolean> {
    return (await this.#db.query(this.#sql.insert, jobParams(job))).rowCount === 1;
  }

  async scheduleJob(job: JobRecord): Promise<void> {
    if (job.key === null) throw new TypeError('scheduleJob needs a job with a key');
    await this.#db.query(this.#sql.schedule, jobParams(job));
  }

  async claimJobs(owner: string, now: number, leaseMs: number, limit: number, kinds: readonly string[]): Promise<JobRecord[]> {
    checkLimit(limit);
    if (kinds.length === 0) return [];
    const result = await this.#db.query(this.#sql.claim, [now, owner, now + leaseMs, limit, kinds]);
    return result.rows.map(toJob).sort((a, b) => a.runAt - b.runAt || a.createdAt - b.createdAt);
  }

  async renewJobLease(id: string, owner: string, until: number): Promise<boolean> {
    return (await this.#db.query(this.#sql.renew, [id, owner, until])).rowCount === 1;
  }

  async finishJob(id: string, owner: string): Promise<boolean> {
    return (await this.#db.query(this.#sql.finish, [id, owner])).rowCount === 1;
  }

  async rescheduleJob(id: string, owner: string, runAt: number, lastError: string | null, attempts: 'keep' | 'reset'): Promise<boolean> {
    return (await this.#db.query(attempts === 'reset' ? this.#sql.rescheduleReset : this.#sql.reschedule, [id, owner, runAt, lastError])).rowCount === 1;
  }

  async countDueJobs(now: number): Promise<number> {
    return (await this.#db.query(this.#sql.countDue, [now])).rows[0]?.['n'] as number;
  }
}
