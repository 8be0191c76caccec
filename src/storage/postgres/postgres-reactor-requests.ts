import type { JobRecord, ReactorRequestOutcome, ReactorRequestRecord } from '../store.js';
import { checkLimit } from '../limit.js';
import type { PgExecutor } from './pg-executor.js';
import { jobInsert, jobParams } from './postgres-jobs.js';

const COLUMNS = 'tenant_id, id, reactor_id, application_id, status, callback_url, timeout_ms, args, result, error, created_at, started_at, completed_at, expires_at';

type Row = Record<string, unknown>;

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

/** The PostgreSQL store's asynchronous-run operations (Store, "asynchronous reactor runs"); `s` is the quoted schema. */
export class PostgresReactorRequests {
  readonly #db: PgExecutor;
  readonly #sql: Record<'insert' | 'get' | 'start' | 'finish' | 'purge', string>;

  constructor(db: PgExecutor, s: string) {
    this.#db = db;
    this.#sql = {
      // The request and its job in one statement: atomic, and one round trip (not BEGIN, two INSERTs, COMMIT).
      insert: `WITH request AS (INSERT INTO ${s}.reactor_requests (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)) ` + jobInsert(s, 15),
      get: `SELECT ${COLUMNS} FROM ${s}.reactor_requests WHERE tenant_id = $1 AND id = $2`,
      start: `UPDATE ${s}.reactor_requests SET status = 'running', started_at = coalesce(started_at, $3) WHERE tenant_id = $1 AND id = $2 AND status IN ('pending', 'running')`,
      finish:
        `UPDATE ${s}.reactor_requests SET status = $3, result = $4, error = $5, completed_at = $6, expires_at = $7 ` +
        `WHERE tenant_id = $1 AND id = $2 AND status IN ('pending', 'running')`,
      purge:
        `DELETE FROM ${s}.reactor_requests WHERE (tenant_id, id) IN ` +
        `(SELECT tenant_id, id FROM ${s}.reactor_requests WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    };
  }

  async createReactorRequest(request: ReactorRequestRecord, job: JobRecord): Promise<void> {
    const r = request;
    await this.#db.query(this.#sql.insert, [
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
      ...jobParams(job),
    ]);
  }

  async getReactorRequest(tenantId: string, id: string): Promise<ReactorRequestRecord | null> {
    const row = (await this.#db.query(this.#sql.get, [tenantId, id])).rows[0];
    return row === undefined ? null : toRequest(row);
  }

  async startReactorRequest(tenantId: string, id: string, now: number): Promise<boolean> {
    return (await this.#db.query(this.#sql.start, [tenantId, id, now])).rowCount === 1;
  }

  async finishReactorRequest(tenantId: string, id: string, o: ReactorRequestOutcome): Promise<boolean> {
    return (await this.#db.query(this.#sql.finish, [tenantId, id, o.status, o.result, o.error, o.completedAt, o.expiresAt])).rowCount === 1;
  }

  async purgeExpiredReactorRequests(now: number, limit: number): Promise<number> {
    return (await this.#db.query(this.#sql.purge, [now, checkLimit(limit)])).rowCount ?? 0;
  }
}
