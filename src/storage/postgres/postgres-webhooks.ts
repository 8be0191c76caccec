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
  type WebhookStore,
} from '../webhook-records.js';
import { SqlParams, runPage } from './paging.js';
import type { PgExecutor } from './pg-executor.js';

const WEBHOOK_COLUMNS = 't.seq, t.tenant_id, t.id, t.name, t.url, t.events, t.created_by, t.created_at, t.modified_by, t.modified_at';
const DELIVERY_COLUMNS =
  't.seq, t.tenant_id, t.id, t.webhook_id, t.request_id, t.event_type, t.url, t.payload, t.status, t.attempts, t.history, t.next_attempt_at, t.created_at, t.completed_at';

function statements(s: string) {
  return Object.freeze({
    insertWebhook:
      `INSERT INTO ${s}.webhooks (tenant_id, id, name, url, events, created_by, created_at, modified_by, modified_at) ` +
      'VALUES ($1, $2, $3, $4, $5::json, $6, $7::int8, $8, $9::int8) ON CONFLICT (tenant_id, id) DO NOTHING',
    getWebhook: `SELECT ${WEBHOOK_COLUMNS} FROM ${s}.webhooks t WHERE t.tenant_id = $1 AND t.id = $2`,
    allWebhooks: `SELECT ${WEBHOOK_COLUMNS} FROM ${s}.webhooks t WHERE t.tenant_id = $1 ORDER BY t.seq LIMIT $2::int8`,
    updateWebhook: `UPDATE ${s}.webhooks SET name = $1, url = $2, events = $3::json, modified_by = $4, modified_at = $5::int8 WHERE tenant_id = $6 AND id = $7`,
    deleteWebhook: `DELETE FROM ${s}.webhooks WHERE tenant_id = $1 AND id = $2`,
    getSecret: `SELECT tenant_id, sealed, version, updated_at FROM ${s}.webhook_secrets WHERE tenant_id = $1`,
    insertSecret: `INSERT INTO ${s}.webhook_secrets (tenant_id, sealed, version, updated_at) VALUES ($1, $2, $3, $4::int8) ON CONFLICT DO NOTHING`,
    replaceSecret: `UPDATE ${s}.webhook_secrets SET sealed = $1, version = $2, updated_at = $3::int8 WHERE tenant_id = $4 AND version = $5`,
    insertDelivery:
      `INSERT INTO ${s}.webhook_deliveries (tenant_id, id, webhook_id, request_id, event_type, url, payload, status, attempts, history, next_attempt_at, created_at, completed_at) ` +
      'VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::json, $11::int8, $12::int8, $13::int8) ON CONFLICT (tenant_id, id) DO NOTHING',
    getDelivery: `SELECT ${DELIVERY_COLUMNS} FROM ${s}.webhook_deliveries t WHERE t.tenant_id = $1 AND t.id = $2`,
    /**
     * One statement: the row is locked by the UPDATE and re-checked against the conditions, so of
     * two concurrent recorders with the same expectation one writes and the other finds nothing.
     * The history keeps its last MAX entries (json array sliced in SQL).
     */
    recordAttempt:
      `UPDATE ${s}.webhook_deliveries SET attempts = attempts + 1, status = $1, next_attempt_at = $2::int8, completed_at = $3::int8, ` +
      `history = (SELECT coalesce(json_agg(e ORDER BY n), '[]'::json) FROM (SELECT e, n FROM json_array_elements((history::jsonb || $4::jsonb)::json) ` +
      `WITH ORDINALITY AS a(e, n) ORDER BY n DESC LIMIT ${MAX_WEBHOOK_HISTORY}) kept) ` +
      "WHERE tenant_id = $5 AND id = $6 AND status = 'pending' AND attempts = $7",
    restartDelivery:
      `UPDATE ${s}.webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $1::int8, completed_at = NULL ` +
      "WHERE tenant_id = $2 AND id = $3 AND status = 'failed'",
    purgeDeliveries:
      `DELETE FROM ${s}.webhook_deliveries WHERE (tenant_id, seq) IN (SELECT tenant_id, seq FROM ${s}.webhook_deliveries WHERE completed_at <= $1::int8 ` +
      'ORDER BY completed_at LIMIT $2::int8 FOR UPDATE SKIP LOCKED)',
  });
}

const toWebhook = (row: Record<string, unknown>): WebhookRecord => ({
  tenantId: row['tenant_id'] as string,
  id: row['id'] as string,
  name: row['name'] as string,
  url: row['url'] as string,
  events: row['events'] as string[],
  createdBy: row['created_by'] as string | null,
  createdAt: row['created_at'] as number,
  modifiedBy: row['modified_by'] as string | null,
  modifiedAt: row['modified_at'] as number | null,
});

const toDelivery = (row: Record<string, unknown>): WebhookDeliveryRecord => ({
  tenantId: row['tenant_id'] as string,
  id: row['id'] as string,
  webhookId: row['webhook_id'] as string | null,
  requestId: row['request_id'] as string | null,
  eventType: row['event_type'] as string,
  url: row['url'] as string | null,
  payload: row['payload'] as Buffer,
  status: row['status'] as WebhookDeliveryRecord['status'],
  attempts: row['attempts'] as number,
  history: row['history'] as WebhookAttempt[],
  nextAttemptAt: row['next_attempt_at'] as number | null,
  createdAt: row['created_at'] as number,
  completedAt: row['completed_at'] as number | null,
});

/** The PostgreSQL side of WebhookStore (see webhook-records.ts for each guarantee); every method is one statement. */
export class PostgresWebhooks implements WebhookStore {
  readonly #db: PgExecutor;
  readonly #s: string;
  readonly #sql: ReturnType<typeof statements>;

  constructor(db: PgExecutor, quotedSchema: string) {
    this.#db = db;
    this.#s = quotedSchema;
    this.#sql = statements(quotedSchema);
  }

  async createWebhook(w: WebhookRecord): Promise<Inserted> {
    const result = await this.#db.query(this.#sql.insertWebhook, [w.tenantId, w.id, w.name, w.url, JSON.stringify(w.events), w.createdBy, w.createdAt, w.modifiedBy, w.modifiedAt]);
    return result.rowCount === 0 ? 'exists' : 'created';
  }

  async getWebhook(tenantId: string, id: string): Promise<WebhookRecord | null> {
    const { rows } = await this.#db.query(this.#sql.getWebhook, [tenantId, id]);
    return rows.length === 0 ? null : toWebhook(rows[0]!);
  }

  listWebhooks(tenantId: string, page: PageRequest): Promise<PageResult<WebhookRecord>> {
    const params = new SqlParams();
    return runPage(this.#db, { columns: WEBHOOK_COLUMNS, from: `FROM ${this.#s}.webhooks t`, where: [`t.tenant_id = ${params.add(tenantId, 'text')}`], params }, page, toWebhook);
  }

  async listAllWebhooks(tenantId: string, limit: number): Promise<WebhookRecord[]> {
    const { rows } = await this.#db.query(this.#sql.allWebhooks, [tenantId, checkLimit(limit)]);
    return rows.map(toWebhook);
  }

  async updateWebhook(w: WebhookRecord): Promise<boolean> {
    const result = await this.#db.query(this.#sql.updateWebhook, [w.name, w.url, JSON.stringify(w.events), w.modifiedBy, w.modifiedAt, w.tenantId, w.id]);
    return result.rowCount === 1;
  }

  async deleteWebhook(tenantId: string, id: string): Promise<boolean> {
    return (await this.#db.query(this.#sql.deleteWebhook, [tenantId, id])).rowCount === 1;
  }

  async getWebhookSecret(tenantId: string): Promise<WebhookSecretRecord | null> {
    const { rows } = await this.#db.query(this.#sql.getSecret, [tenantId]);
    const row = rows[0];
    return row === undefined
      ? null
      : { tenantId: row['tenant_id'] as string, sealed: row['sealed'] as Buffer, version: row['version'] as number, updatedAt: row['updated_at'] as number };
  }

  async putWebhookSecret(record: WebhookSecretRecord, expectedVersion: number | null): Promise<boolean> {
    const { tenantId, sealed, version, updatedAt } = record;
    const result =
      expectedVersion === null
        ? await this.#db.query(this.#sql.insertSecret, [tenantId, sealed, version, updatedAt])
        : await this.#db.query(this.#sql.replaceSecret, [sealed, version, updatedAt, tenantId, expectedVersion]);
    return result.rowCount === 1;
  }

  async createWebhookDelivery(d: WebhookDeliveryRecord): Promise<Inserted> {
    const result = await this.#db.query(this.#sql.insertDelivery, [
      d.tenantId,
      d.id,
      d.webhookId,
      d.requestId,
      d.eventType,
      d.url,
      d.payload,
      d.status,
      d.attempts,
      JSON.stringify(d.history),
      d.nextAttemptAt,
      d.createdAt,
      d.completedAt,
    ]);
    return result.rowCount === 0 ? 'exists' : 'created';
  }

  async getWebhookDelivery(tenantId: string, id: string): Promise<WebhookDeliveryRecord | null> {
    const { rows } = await this.#db.query(this.#sql.getDelivery, [tenantId, id]);
    return rows.length === 0 ? null : toDelivery(rows[0]!);
  }

  listWebhookDeliveries(tenantId: string, filter: WebhookDeliveryFilter, page: PageRequest): Promise<PageResult<WebhookDeliveryRecord>> {
    const params = new SqlParams();
    const where = [`t.tenant_id = ${params.add(tenantId, 'text')}`];
    if (filter.webhookId !== undefined) where.push(`t.webhook_id = ${params.add(filter.webhookId, 'text')}`);
    if (filter.requestId !== undefined) where.push(`t.request_id = ${params.add(filter.requestId, 'text')}`);
    return runPage(this.#db, { columns: DELIVERY_COLUMNS, from: `FROM ${this.#s}.webhook_deliveries t`, where, params }, page, toDelivery);
  }

  async recordWebhookAttempt(tenantId: string, id: string, expectedAttempts: number, attempt: WebhookAttempt, outcome: WebhookAttemptOutcome): Promise<boolean> {
    const result = await this.#db.query(this.#sql.recordAttempt, [
      outcome.status,
      outcome.nextAttemptAt,
      outcome.completedAt,
      JSON.stringify([attempt]),
      tenantId,
      id,
      expectedAttempts,
    ]);
    return result.rowCount === 1;
  }

  async restartWebhookDelivery(tenantId: string, id: string, now: number): Promise<boolean> {
    return (await this.#db.query(this.#sql.restartDelivery, [now, tenantId, id])).rowCount === 1;
  }

  async purgeWebhookDeliveries(before: number, limit: number): Promise<number> {
    return (await this.#db.query(this.#sql.purgeDeliveries, [before, checkLimit(limit)])).rowCount ?? 0;
  }
}
