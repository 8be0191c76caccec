import type { ReactorRequestRecord } from '../store.js';
import { checkLimit } from '../limit.js';
import { lock, raw, sql, table } from '../sql/sql.js';
import { operation, query, type AreaOperations, type Row } from '../sql/operation.js';
import { jobArgs, JOBS_SQL } from './jobs.js';

const REQUESTS = table('reactor_requests');
const COLUMNS = raw('tenant_id, id, reactor_id, application_id, status, callback_url, timeout_ms, args, result, error, created_at, started_at, completed_at, expires_at');
const INSERT = sql`INSERT INTO ${REQUESTS} (${COLUMNS}) VALUES (${1}, ${2}, ${3}, ${4}, ${5}, ${6}, ${7}, ${8}, ${9}, ${10}, ${11}, ${12}, ${13}, ${14})`;

const toRequest = (row: Row): ReactorRequestRecord => ({
  tenantId: row['tenant_id'] as string,
  id: row['id'] as string,
  reactorId: row['reactor_id'] as string,
  applicationId: row['application_id'] as string,
  status: row['status'] as ReactorRequestRecord['status'],
  callbackUrl: row['callback_url'] as string | null,
  timeoutMs: row['timeout_ms'] as number,
  args: row['args'] as Uint8Array,
  result: row['result'] as Uint8Array | null,
  error: row['error'] as string | null,
  createdAt: row['created_at'] as number,
  startedAt: row['started_at'] as number | null,
  completedAt: row['completed_at'] as number | null,
  expiresAt: row['expires_at'] as number | null,
});

const requestArgs = (r: ReactorRequestRecord): unknown[] => [
  r.tenantId,
  r.id,
  r.reactorId,
  r.applicationId,
  r.status,
  r.callbackUrl,
  r.timeoutMs,
  r.args,
  r.result,
  r.error,
  r.createdAt,
  r.startedAt,
  r.completedAt,
  r.expiresAt,
];

/** The job insert with its arguments numbered from 15, after the request's 14. */
const JOB_AFTER_REQUEST = sql`INSERT INTO ${table('jobs')} (id, tenant_id, kind, key, payload, run_at, attempts, lease_owner, lease_expires_at, created_at, last_error, max_attempts) VALUES (${15}, ${16}, ${17}, ${18}, ${19}, ${20}, ${21}, ${22}, ${23}, ${24}, ${25}, ${26}) ON CONFLICT DO NOTHING`;

export const REACTOR_REQUESTS_SQL = {
  insert: INSERT,
  get: sql`SELECT ${COLUMNS} FROM ${REQUESTS} WHERE tenant_id = ${1} AND id = ${2}`,
  start: sql`UPDATE ${REQUESTS} SET status = 'running', started_at = coalesce(started_at, ${3}) WHERE tenant_id = ${1} AND id = ${2} AND status IN ('pending', 'running')`,
  finish: sql`UPDATE ${REQUESTS} SET status = ${3}, result = ${4}, error = ${5}, completed_at = ${6}, expires_at = ${7} WHERE tenant_id = ${1} AND id = ${2} AND status IN ('pending', 'running')`,
  purge: sql`DELETE FROM ${REQUESTS} WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM ${REQUESTS} WHERE expires_at <= ${1} ORDER BY expires_at LIMIT ${2}${lock('update skip locked')})`,
};

/** Statements of dialects with a data-modifying WITH (Dialect.writingWith) only. */
export const REACTOR_REQUESTS_WRITING_WITH_SQL = {
  /** The request and its job in one statement: atomic, and one round trip instead of BEGIN, two INSERTs, COMMIT. */
  insertWithJob: sql`WITH request AS (${INSERT}) ${JOB_AFTER_REQUEST}`,
};

const SQL = { ...REACTOR_REQUESTS_SQL, ...REACTOR_REQUESTS_WRITING_WITH_SQL };

/** Asynchronous reactor runs (store-parts.ts, area `reactorRequests`). */
export const REACTOR_REQUESTS: AreaOperations<'reactorRequests'> = {
  // SQLite has no data-modifying WITH: there the two inserts share one write transaction.
  createReactorRequest: operation(
    (d) => (d.writingWith ? 'statement' : 'write'),
    function* (d, request, job) {
      if (d.writingWith) {
        yield query(SQL.insertWithJob, ...requestArgs(request), ...jobArgs(job));
        return;
      }
      yield query(SQL.insert, ...requestArgs(request));
      yield query(JOBS_SQL.insert, ...jobArgs(job));
    },
  ),
  getReactorRequest: operation('statement', function* (_d, tenantId, id) {
    const row = (yield query(SQL.get, tenantId, id)).rows[0];
    return row === undefined ? null : toRequest(row);
  }),
  startReactorRequest: operation('statement', function* (_d, tenantId, id, now) {
    return (yield query(SQL.start, tenantId, id, now)).changes === 1;
  }),
  finishReactorRequest: operation('statement', function* (_d, tenantId, id, o) {
    return (yield query(SQL.finish, tenantId, id, o.status, o.result, o.error, o.completedAt, o.expiresAt)).changes === 1;
  }),
  purgeExpiredReactorRequests: operation('statement', function* (_d, now, limit) {
    return (yield query(SQL.purge, now, checkLimit(limit))).changes;
  }),
};
