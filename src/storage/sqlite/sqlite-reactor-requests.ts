import type { JobRecord, ReactorRequestOutcome, ReactorRequestRecord } from '../store.js';
import { checkLimit } from '../limit.js';
import type { SqliteJobs } from './sqlite-jobs.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import type { StatementCache } from './statement-cache.js';

const COLUMNS = 'tenant_id, id, reactor_id, application_id, status, callback_url, timeout_ms, args, result, error, created_at, started_at, completed_at, expires_at';

const SQL = {
  insert: `INSERT INTO reactor_requests (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  get: `SELECT ${COLUMNS} FROM reactor_requests WHERE tenant_id = ? AND id = ?`,
  start: "UPDATE reactor_requests SET status = 'running', started_at = coalesce(started_at, ?) WHERE tenant_id = ? AND id = ? AND status IN ('pending', 'running')",
  finish: "UPDATE reactor_requests SET status = ?, result = ?, error = ?, completed_at = ?, expires_at = ? WHERE tenant_id = ? AND id = ? AND status IN ('pending', 'running')",
  purge: 'DELETE FROM reactor_requests WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM reactor_requests WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)',
} as const;

interface Row {
  tenant_id: string;
  id: string;
  reactor_id: string;
  application_id: string;
  status: ReactorRequestRecord['status'];
  callback_url: string | null;
  timeout_ms: number;
  args: Uint8Array;
  result: Uint8Array | null;
  error: string | null;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
  expires_at: number | null;
}

const toRequest = (row: Row): ReactorRequestRecord => ({
  tenantId: row.tenant_id,
  id: row.id,
  reactorId: row.reactor_id,
  applicationId: row.application_id,
  status: row.status,
  callbackUrl: row.callback_url,
  timeoutMs: row.timeout_ms,
  args: row.args,
  result: row.result,
  error: row.error,
  createdAt: row.created_at,
  startedAt: row.started_at,
  completedAt: row.completed_at,
  expiresAt: row.expires_at,
});

/** The SQLite store's asynchronous-run operations (Store, "asynchronous reactor runs"). */
export class SqliteReactorRequests {
  readonly #statements: StatementCache;
  readonly #createTx: SqliteTransaction<(request: ReactorRequestRecord, job: JobRecord) => void>;

  constructor(db: BetterSqlite3Database, statements: StatementCache, jobs: SqliteJobs) {
    this.#statements = statements;
    this.#createTx = db.transaction((request: ReactorRequestRecord, job: JobRecord) => {
      const r = request;
      statements
        .get(SQL.insert)
        .run(r.tenantId, r.id, r.reactorId, r.applicationId, r.status, r.callbackUrl, r.timeoutMs, r.args, r.result, r.error, r.createdAt, r.startedAt, r.completedAt, r.expiresAt);
      jobs.enqueueJob(job);
    });
  }

  createReactorRequest(request: ReactorRequestRecord, job: JobRecord): void {
    this.#createTx.immediate(request, job);
  }

  getReactorRequest(tenantId: string, id: string): ReactorRequestRecord | null {
    const row = this.#statements.get(SQL.get).get(tenantId, id) as Row | undefined;
    return row === undefined ? null : toRequest(row);
  }

  startReactorRequest(tenantId: string, id: string, now: number): boolean {
    return this.#statements.get(SQL.start).run(now, tenantId, id).changes === 1;
  }

  finishReactorRequest(tenantId: string, id: string, o: ReactorRequestOutcome): boolean {
    return this.#statements.get(SQL.finish).run(o.status, o.result, o.error, o.completedAt, o.expiresAt, tenantId, id).changes === 1;
  }

  purgeExpiredReactorRequests(now: number, limit: number): number {
    return this.#statements.get(SQL.purge).run(now, checkLimit(limit)).changes;
  }
}
