import { checkLimit } from '../limit.js';
import type { Inserted, PageRequest, PageResult } from '../store.js';
import {
  MAX_WEBHOOK_HISTORY,
  type WebhookAttempt,
  type WebhookAttemptOutcome,
  type WebhookDeliveryFilter,
  type WebhookDeliveryRecord,
  type WebhookRecord,
  type WebhookSecretRecord,
} from '../webhook-records.js';
import { runPage } from './paging.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import type { StatementCache } from './statement-cache.js';

const WEBHOOK_COLUMNS = 't.seq, t.tenant_id, t.id, t.name, t.url, t.events, t.created_by, t.created_at, t.modified_by, t.modified_at';
const DELIVERY_COLUMNS =
  't.seq, t.tenant_id, t.id, t.webhook_id, t.request_id, t.event_type, t.url, t.payload, t.status, t.attempts, t.history, t.next_attempt_at, t.created_at, t.completed_at';

const SQL = {
  insertWebhook:
    'INSERT INTO webhooks (tenant_id, id, name, url, events, created_by, created_at, modified_by, modified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ' +
    'ON CONFLICT (tenant_id, id) DO NOTHING',
  getWebhook: `SELECT ${WEBHOOK_COLUMNS} FROM webhooks t WHERE t.tenant_id = ? AND t.id = ?`,
  allWebhooks: `SELECT ${WEBHOOK_COLUMNS} FROM webhooks t WHERE t.tenant_id = ? ORDER BY t.seq LIMIT ?`,
  updateWebhook: 'UPDATE webhooks SET name = ?, url = ?, events = ?, modified_by = ?, modified_at = ? WHERE tenant_id = ? AND id = ?',
  deleteWebhook: 'DELETE FROM webhooks WHERE tenant_id = ? AND id = ?',
  getSecret: 'SELECT tenant_id, sealed, version, updated_at FROM webhook_secrets WHERE tenant_id = ?',
  insertSecret: 'INSERT INTO webhook_secrets (tenant_id, sealed, version, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
  replaceSecret: 'UPDATE webhook_secrets SET sealed = ?, version = ?, updated_at = ? WHERE tenant_id = ? AND version = ?',
  insertDelivery:
    'INSERT INTO webhook_deliveries (tenant_id, id, webhook_id, request_id, event_type, url, payload, status, attempts, history, next_attempt_at, created_at, completed_at) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, id) DO NOTHING',
  getDelivery: `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries t WHERE t.tenant_id = ? AND t.id = ?`,
  pendingDelivery: "SELECT history FROM webhook_deliveries WHERE tenant_id = ? AND id = ? AND status = 'pending' AND attempts = ?",
  recordAttempt: 'UPDATE webhook_deliveries SET history = ?, attempts = attempts + 1, status = ?, next_attempt_at = ?, completed_at = ? WHERE tenant_id = ? AND id = ?',
  restartDelivery: "UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?, completed_at = NULL WHERE tenant_id = ? AND id = ? AND status = 'failed'",
  purgeDeliveries: 'DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE completed_at <= ? ORDER BY completed_at LIMIT ?)',
} as const;

interface WebhookRow {
  seq: number;
  tenant_id: string;
  id: string;
  name: string;
  url: string;
  events: string;
  created_by: string | null;
  created_at: number;
  modified_by: string | null;
  modified_at: number | null;
}

interface DeliveryRow {
  seq: number;
  tenant_id: string;
  id: string;
  webhook_id: string | null;
  request_id: string | null;
  event_type: string;
  url: string | null;
  payload: Buffer;
  status: WebhookDeliveryRecord['status'];
  attempts: number;
  history: string;
  next_attempt_at: number | null;
  created_at: number;
  completed_at: number | null;
}

const toWebhook = (row: WebhookRow): WebhookRecord => ({
  tenantId: row.tenant_id,
  id: row.id,
  name: row.name,
  url: row.url,
  events: JSON.parse(row.events) as string[],
  createdBy: row.created_by,
  createdAt: row.created_at,
  modifiedBy: row.modified_by,
  modifiedAt: row.modified_at,
});

const toDelivery = (row: DeliveryRow): WebhookDeliveryRecord => ({
  tenantId: row.tenant_id,
  id: row.id,
  webhookId: row.webhook_id,
  requestId: row.request_id,
  eventType: row.event_type,
  url: row.url,
  payload: row.payload,
  status: row.status,
  attempts: row.attempts,
  history: JSON.parse(row.history) as WebhookAttempt[],
  nextAttemptAt: row.next_attempt_at,
  createdAt: row.created_at,
  completedAt: row.completed_at,
});

/** The SQLite side of WebhookStore (see webhook-records.ts for each guarantee). */
/** The webhook part of the SQLite store's core (synchronous, like it; see sqlite-boundary.ts). */
export class SqliteWebhooks {
  #statements: StatementCache;
  #read: <R>(fn: () => R) => R;
  #recordTx: SqliteTransaction<(tenantId: string, id: string, expected: number, attempt: WebhookAttempt, outcome: WebhookAttemptOutcome) => boolean>;

  constructor(db: BetterSqlite3Database, statements: StatementCache, read: <R>(fn: () => R) => R) {
    this.#statements = statements;
    this.#read = read;
    this.#recordTx = db.transaction((tenantId: string, id: string, expected: number, attempt: WebhookAttempt, outcome: WebhookAttemptOutcome) => {
      const row = this.#statements.get(SQL.pendingDelivery).get(tenantId, id, expected) as { history: string } | undefined;
      if (row === undefined) return false;
      const history = [...(JSON.parse(row.history) as WebhookAttempt[]), attempt].slice(-MAX_WEBHOOK_HISTORY);
      this.#statements.get(SQL.recordAttempt).run(JSON.stringify(history), outcome.status, outcome.nextAttemptAt, outcome.completedAt, tenantId, id);
      return true;
    });
  }

  createWebhook(w: WebhookRecord): Inserted {
    const result = this.#statements.get(SQL.insertWebhook).run(w.tenantId, w.id, w.name, w.url, JSON.stringify(w.events), w.createdBy, w.createdAt, w.modifiedBy, w.modifiedAt);
    return result.changes === 0 ? 'exists' : 'created';
  }

  getWebhook(tenantId: string, id: string): WebhookRecord | null {
    const row = this.#statements.get(SQL.getWebhook).get(tenantId, id) as WebhookRow | undefined;
    return row === undefined ? null : toWebhook(row);
  }

  listWebhooks(tenantId: string, page: PageRequest): PageResult<WebhookRecord> {
    return runPage(this.#statements, this.#read, { columns: WEBHOOK_COLUMNS, from: 'FROM webhooks t WHERE t.tenant_id = ?', params: [tenantId] }, page, toWebhook);
  }

  listAllWebhooks(tenantId: string, limit: number): WebhookRecord[] {
    return (this.#statements.get(SQL.allWebhooks).all(tenantId, checkLimit(limit)) as WebhookRow[]).map(toWebhook);
  }

  updateWebhook(w: WebhookRecord): boolean {
    return this.#statements.get(SQL.updateWebhook).run(w.name, w.url, JSON.stringify(w.events), w.modifiedBy, w.modifiedAt, w.tenantId, w.id).changes === 1;
  }

  deleteWebhook(tenantId: string, id: string): boolean {
    return this.#statements.get(SQL.deleteWebhook).run(tenantId, id).changes === 1;
  }

  getWebhookSecret(tenantId: string): WebhookSecretRecord | null {
    const row = this.#statements.get(SQL.getSecret).get(tenantId) as { tenant_id: string; sealed: Buffer; version: number; updated_at: number } | undefined;
    return row === undefined ? null : { tenantId: row.tenant_id, sealed: row.sealed, version: row.version, updatedAt: row.updated_at };
  }

  putWebhookSecret(record: WebhookSecretRecord, expectedVersion: number | null): boolean {
    const { tenantId, sealed, version, updatedAt } = record;
    const result =
      expectedVersion === null
        ? this.#statements.get(SQL.insertSecret).run(tenantId, sealed, version, updatedAt)
        : this.#statements.get(SQL.replaceSecret).run(sealed, version, updatedAt, tenantId, expectedVersion);
    return result.changes === 1;
  }

  createWebhookDelivery(d: WebhookDeliveryRecord): Inserted {
    const result = this.#statements
      .get(SQL.insertDelivery)
      .run(d.tenantId, d.id, d.webhookId, d.requestId, d.eventType, d.url, d.payload, d.status, d.attempts, JSON.stringify(d.history), d.nextAttemptAt, d.createdAt, d.completedAt);
    return result.changes === 0 ? 'exists' : 'created';
  }

  getWebhookDelivery(tenantId: string, id: string): WebhookDeliveryRecord | null {
    const row = this.#statements.get(SQL.getDelivery).get(tenantId, id) as DeliveryRow | undefined;
    return row === undefined ? null : toDelivery(row);
  }

  listWebhookDeliveries(tenantId: string, filter: WebhookDeliveryFilter, page: PageRequest): PageResult<WebhookDeliveryRecord> {
    const where = ['t.tenant_id = ?'];
    const params: unknown[] = [tenantId];
    if (filter.webhookId !== undefined) {
      where.push('t.webhook_id = ?');
      params.push(filter.webhookId);
    }
    if (filter.requestId !== undefined) {
      where.push('t.request_id = ?');
      params.push(filter.requestId);
    }
    return runPage(this.#statements, this.#read, { columns: DELIVERY_COLUMNS, from: `FROM webhook_deliveries t WHERE ${where.join(' AND ')}`, params }, page, toDelivery);
  }

  /** One IMMEDIATE transaction: read the pending row, append, write. */
  recordWebhookAttempt(tenantId: string, id: string, expectedAttempts: number, attempt: WebhookAttempt, outcome: WebhookAttemptOutcome): boolean {
    return this.#recordTx.immediate(tenantId, id, expectedAttempts, attempt, outcome);
  }

  restartWebhookDelivery(tenantId: string, id: string, now: number): boolean {
    return this.#statements.get(SQL.restartDelivery).run(now, tenantId, id).changes === 1;
  }

  purgeWebhookDeliveries(before: number, limit: number): number {
    return this.#statements.get(SQL.purgeDeliveries).run(before, checkLimit(limit)).changes;
  }
}
