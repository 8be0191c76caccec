import type { JobRecord } from '../store.js';
import { checkLimit } from '../limit.js';
import type { StatementCache } from './statement-cache.js';

const COLUMNS = 'id, tenant_id, kind, key, payload, run_at, attempts, lease_owner, lease_expires_at, created_at, last_error, max_attempts';
const DUE = 'run_at <= ? AND (lease_owner IS NULL OR lease_expires_at <= ?)';

const SQL = {
  insert: `INSERT INTO jobs (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  // The earlier runAt wins: a clock stepped back must not leave the stored, later one in place.
  schedule: `INSERT INTO jobs (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET run_at = min(run_at, excluded.run_at)`,
  // One statement: atomic by itself, so two connections (two processes on one file) never claim one job.
  claim:
    `UPDATE jobs SET lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1 ` +
    `WHERE id IN (SELECT id FROM jobs WHERE ${DUE} AND kind IN (SELECT value FROM json_each(?)) ORDER BY run_at, created_at LIMIT ?) RETURNING ${COLUMNS}`,
  renew: 'UPDATE jobs SET lease_expires_at = ? WHERE id = ? AND lease_owner = ?',
  finish: 'DELETE FROM jobs WHERE id = ? AND lease_owner = ?',
  reschedule: 'UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL, run_at = ?, last_error = ? WHERE id = ? AND lease_owner = ?',
  rescheduleReset: 'UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL, run_at = ?, last_error = ?, attempts = 0 WHERE id = ? AND lease_owner = ?',
  countDue: `SELECT count(*) AS n FROM jobs WHERE ${DUE}`,
} as const;

interface JobRow {
  id: string;
  tenant_id: string | null;
  kind: string;
  key: string | null;
  payload: string;
  run_at: number;
  attempts: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  created_at: number;
  last_error: string | null;
  max_attempts: number;
}

const toJob = (row: JobRow): JobRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  kind: row.kind,
  key: row.key,
  payload: row.payload,
  runAt: row.run_at,
  attempts: row.attempts,
  leaseOwner: row.lease_owner,
  leaseExpiresAt: row.lease_expires_at,
  createdAt: row.created_at,
  lastError: row.last_error,
  maxAttempts: row.max_attempts,
});

/** The SQLite store's job operations (Store, "background jobs"). */
export class SqliteJobs {
  readonly #statements: StatementCache;

  constructor(statements: StatementCache) {
    this.#statements = statements;
  }

  enqueueJob(job: JobRecord): boolean {
    const { id, tenantId, kind, key, payload, runAt, attempts, leaseOwner, leaseExpiresAt, createdAt, lastError, maxAttempts } = job;
    return this.#statements.get(SQL.insert).run(id, tenantId, kind, key, payload, runAt, attempts, leaseOwner, leaseExpiresAt, createdAt, lastError, maxAttempts).changes === 1;
  }

  scheduleJob(job: JobRecord): void {
    if (job.key === null) throw new TypeError('scheduleJob needs a job with a key');
    const { id, tenantId, kind, key, payload, runAt, attempts, leaseOwner, leaseExpiresAt, createdAt, lastError, maxAttempts } = job;
    this.#statements.get(SQL.schedule).run(id, tenantId, kind, key, payload, runAt, attempts, leaseOwner, leaseExpiresAt, createdAt, lastError, maxAttempts);
  }

  claimJobs(owner: string, now: number, leaseMs: number, limit: number, kinds: readonly string[]): JobRecord[] {
    checkLimit(limit);
    if (kinds.length === 0) return [];
    const rows = this.#statements.get(SQL.claim).all(owner, now + leaseMs, now, now, JSON.stringify(kinds), limit) as JobRow[];
    return rows.map(toJob).sort((a, b) => a.runAt - b.runAt || a.createdAt - b.createdAt);
  }

  renewJobLease(id: string, owner: string, until: number): boolean {
    return this.#statements.get(SQL.renew).run(until, id, owner).changes === 1;
  }

  finishJob(id: string, owner: string): boolean {
    return this.#statements.get(SQL.finish).run(id, owner).changes === 1;
  }

  rescheduleJob(id: string, owner: string, runAt: number, lastError: string | null, attempts: 'keep' | 'reset'): boolean {
    return this.#statements.get(attempts === 'reset' ? SQL.rescheduleReset : SQL.reschedule).run(runAt, lastError, id, owner).changes === 1;
  }

  countDueJobs(now: number): number {
    return (this.#statements.get(SQL.countDue).get(now, now) as { n: number }).n;
  }
}
