import type { JobRecord } from '../store.js';
import { checkLimit } from '../limit.js';
import { byDialect, inList, lock, raw, sql, table } from '../sql/sql.js';
import { operation, query, type AreaOperations, type Row } from '../sql/operation.js';

const JOBS = table('jobs');
const COLUMNS = raw('id, tenant_id, kind, key, payload, run_at, attempts, lease_owner, lease_expires_at, created_at, last_error, max_attempts');

/** The values of one job row, in COLUMNS' order (arguments 1-12 of JOBS_SQL.insert). */
export function jobArgs(job: JobRecord): unknown[] {
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

/** Due at `now` (argument 1): its time has come and no live lease holds it. */
const DUE = sql`run_at <= ${1} AND (lease_owner IS NULL OR lease_expires_at <= ${1})`;
const VALUES = sql`(${COLUMNS}) VALUES (${1}, ${2}, ${3}, ${4}, ${5}, ${6}, ${7}, ${8}, ${9}, ${10}, ${11}, ${12})`;

export const JOBS_SQL = {
  insert: sql`INSERT INTO ${JOBS} ${VALUES} ON CONFLICT DO NOTHING`,
  // The earlier runAt wins: a clock stepped back must not leave the stored, later one in place.
  schedule: sql`INSERT INTO ${JOBS} ${VALUES} ON CONFLICT (key) DO UPDATE SET run_at = ${byDialect({ sqlite: 'min', postgres: 'LEAST' })}(${JOBS}.run_at, excluded.run_at)`,
  /**
   * now, owner, lease end, limit, kinds. One statement: atomic by itself, so two claimers never take
   * one job. SKIP LOCKED (PostgreSQL): concurrent claimers (other instances) pass over rows another
   * claim is taking, so none waits on another; SQLite has one writer at a time.
   */
  claim: sql`UPDATE ${JOBS} SET lease_owner = ${2}, lease_expires_at = ${3}, attempts = attempts + 1 WHERE id IN (SELECT id FROM ${JOBS} WHERE ${DUE} AND kind ${inList(5, 'text')} ORDER BY run_at, created_at LIMIT ${4}${lock('update skip locked')}) RETURNING ${COLUMNS}`,
  renew: sql`UPDATE ${JOBS} SET lease_expires_at = ${3} WHERE id = ${1} AND lease_owner = ${2}`,
  finish: sql`DELETE FROM ${JOBS} WHERE id = ${1} AND lease_owner = ${2}`,
  reschedule: sql`UPDATE ${JOBS} SET lease_owner = NULL, lease_expires_at = NULL, run_at = ${3}, last_error = ${4} WHERE id = ${1} AND lease_owner = ${2}`,
  rescheduleReset: sql`UPDATE ${JOBS} SET lease_owner = NULL, lease_expires_at = NULL, run_at = ${3}, last_error = ${4}, attempts = 0 WHERE id = ${1} AND lease_owner = ${2}`,
  countDue: sql`SELECT count(*) AS n FROM ${JOBS} WHERE ${DUE}`,
};

const SQL = JOBS_SQL;

/** Background jobs (store-parts.ts, area `jobs`; Store, "background jobs"). */
export const JOBS_AREA: AreaOperations<'jobs'> = {
  enqueueJob: operation('statement', function* (_d, job) {
    return (yield query(SQL.insert, ...jobArgs(job))).changes === 1;
  }),
  scheduleJob: operation('statement', function* (_d, job) {
    if (job.key === null) throw new TypeError('scheduleJob needs a job with a key');
    yield query(SQL.schedule, ...jobArgs(job));
  }),
  claimJobs: operation('statement', function* (_d, owner, now, leaseMs, limit, kinds) {
    checkLimit(limit);
    if (kinds.length === 0) return [];
    const { rows } = yield query(SQL.claim, now, owner, now + leaseMs, limit, kinds);
    return rows.map(toJob).sort((a, b) => a.runAt - b.runAt || a.createdAt - b.createdAt);
  }),
  renewJobLease: operation('statement', function* (_d, id, owner, until) {
    return (yield query(SQL.renew, id, owner, until)).changes === 1;
  }),
  finishJob: operation('statement', function* (_d, id, owner) {
    return (yield query(SQL.finish, id, owner)).changes === 1;
  }),
  rescheduleJob: operation('statement', function* (_d, id, owner, runAt, lastError, attempts) {
    return (yield query(attempts === 'reset' ? SQL.rescheduleReset : SQL.reschedule, id, owner, runAt, lastError)).changes === 1;
  }),
  countDueJobs: operation('statement', function* (_d, now) {
    return (yield query(SQL.countDue, now)).rows[0]!['n'] as number;
  }),
};
