import { checkLimit } from '../limit.js';
import type { Dialect } from '../sql/dialect.js';
import { listStatements, listStatementsByName, pageSteps, type ListStatements } from '../sql/list-page.js';
import { operation, query, type AreaOperations, type Row } from '../sql/operation.js';
import { byDialect, lock, raw, sql, table } from '../sql/sql.js';
import { locksRows } from '../sql/record-update.js';
import { MAX_WEBHOOK_HISTORY, type WebhookAttempt, type WebhookDeliveryRecord, type WebhookRecord } from '../webhook-records.js';

// Event webhooks, the tenant's signing secret and webhook deliveries (webhook-records.ts tells
// each method's guarantee). Every statement is one atomic statement on both dialects.

const WEBHOOKS = table('webhooks');
const DELIVERIES = table('webhook_deliveries');
const SECRETS = table('webhook_secrets');
const WEBHOOK_COLUMNS = raw('t.seq, t.tenant_id, t.id, t.name, t.url, t.events, t.created_by, t.created_at, t.modified_by, t.modified_at');
const DELIVERY_COLUMNS = raw(
  't.seq, t.tenant_id, t.id, t.webhook_id, t.request_id, t.event_type, t.url, t.payload, t.status, t.attempts, t.history, t.next_attempt_at, t.created_at, t.completed_at',
);

const toWebhook = (d: Dialect, row: Row): WebhookRecord => ({
  tenantId: row['tenant_id'] as string,
  id: row['id'] as string,
  name: row['name'] as string,
  url: row['url'] as string,
  events: d.json<string[]>(row['events']),
  createdBy: row['created_by'] as string | null,
  createdAt: row['created_at'] as number,
  modifiedBy: row['modified_by'] as string | null,
  modifiedAt: row['modified_at'] as number | null,
});

const toDelivery = (d: Dialect, row: Row): WebhookDeliveryRecord => ({
  tenantId: row['tenant_id'] as string,
  id: row['id'] as string,
  webhookId: row['webhook_id'] as string | null,
  requestId: row['request_id'] as string | null,
  eventType: row['event_type'] as string,
  url: row['url'] as string | null,
  payload: row['payload'] as Buffer,
  status: row['status'] as WebhookDeliveryRecord['status'],
  attempts: row['attempts'] as number,
  history: d.json<WebhookAttempt[]>(row['history']),
  nextAttemptAt: row['next_attempt_at'] as number | null,
  createdAt: row['created_at'] as number,
  completedAt: row['completed_at'] as number | null,
});

const DELIVERIES_OF_TENANT = sql`FROM ${DELIVERIES} t WHERE t.tenant_id = ${1}`;
/** listWebhookDeliveries by filter: the webhook, the request, or both, after the tenant. */
const LISTS = {
  webhooks: listStatements(WEBHOOK_COLUMNS, sql`FROM ${WEBHOOKS} t WHERE t.tenant_id = ${1}`, 1),
  deliveries: listStatements(DELIVERY_COLUMNS, DELIVERIES_OF_TENANT, 1),
  deliveriesOfWebhook: listStatements(DELIVERY_COLUMNS, sql`${DELIVERIES_OF_TENANT} AND t.webhook_id = ${2}`, 2),
  deliveriesOfRequest: listStatements(DELIVERY_COLUMNS, sql`${DELIVERIES_OF_TENANT} AND t.request_id = ${2}`, 2),
  deliveriesOfBoth: listStatements(DELIVERY_COLUMNS, sql`${DELIVERIES_OF_TENANT} AND t.webhook_id = ${2} AND t.request_id = ${3}`, 3),
} satisfies Record<string, ListStatements>;

/**
 * PostgreSQL appends the attempt and keeps the last MAX_WEBHOOK_HISTORY inside the UPDATE (jsonb):
 * the row is locked by it and re-checked against its conditions, so of two concurrent recorders
 * with the same expectation one writes and the other finds nothing, in one round trip. SQLite reads
 * the history and writes it back in one write transaction (its one writer at a time gives the
 * same), appending in JS: cheaper there than json_each and json_group_array over 50 entries.
 */
const APPENDED_HISTORY = sql`(SELECT coalesce(json_agg(e ORDER BY n), '[]'::json) FROM (SELECT e, n FROM json_array_elements((history::jsonb || ${4}::jsonb)::json) WITH ORDINALITY AS a(e, n) ORDER BY n DESC LIMIT ${raw(String(MAX_WEBHOOK_HISTORY))}) kept)`;

/** A delivery's key for the purge: its row id on SQLite (the primary key), (tenant, seq) on PostgreSQL (a distributed table's shard key first: docs/scaling.md). */
const DELIVERY_KEY = byDialect({ sqlite: 'seq', postgres: '(tenant_id, seq)' });
const DELIVERY_KEY_COLUMNS = byDialect({ sqlite: 'seq', postgres: 'tenant_id, seq' });

export const WEBHOOKS_SQL = {
  insertWebhook: sql`INSERT INTO ${WEBHOOKS} (tenant_id, id, name, url, events, created_by, created_at, modified_by, modified_at) VALUES (${1}, ${2}, ${3}, ${4}, ${5}, ${6}, ${7}, ${8}, ${9}) ON CONFLICT (tenant_id, id) DO NOTHING`,
  getWebhook: sql`SELECT ${WEBHOOK_COLUMNS} FROM ${WEBHOOKS} t WHERE t.tenant_id = ${1} AND t.id = ${2}`,
  allWebhooks: sql`SELECT ${WEBHOOK_COLUMNS} FROM ${WEBHOOKS} t WHERE t.tenant_id = ${1} ORDER BY t.seq LIMIT ${2}`,
  updateWebhook: sql`UPDATE ${WEBHOOKS} SET name = ${1}, url = ${2}, events = ${3}, modified_by = ${4}, modified_at = ${5} WHERE tenant_id = ${6} AND id = ${7}`,
  deleteWebhook: sql`DELETE FROM ${WEBHOOKS} WHERE tenant_id = ${1} AND id = ${2}`,
  getSecret: sql`SELECT tenant_id, sealed, version, updated_at FROM ${SECRETS} WHERE tenant_id = ${1}`,
  insertSecret: sql`INSERT INTO ${SECRETS} (tenant_id, sealed, version, updated_at) VALUES (${1}, ${2}, ${3}, ${4}) ON CONFLICT DO NOTHING`,
  replaceSecret: sql`UPDATE ${SECRETS} SET sealed = ${1}, version = ${2}, updated_at = ${3} WHERE tenant_id = ${4} AND version = ${5}`,
  insertDelivery: sql`INSERT INTO ${DELIVERIES} (tenant_id, id, webhook_id, request_id, event_type, url, payload, status, attempts, history, next_attempt_at, created_at, completed_at) VALUES (${1}, ${2}, ${3}, ${4}, ${5}, ${6}, ${7}, ${8}, ${9}, ${10}, ${11}, ${12}, ${13}) ON CONFLICT (tenant_id, id) DO NOTHING`,
  getDelivery: sql`SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERIES} t WHERE t.tenant_id = ${1} AND t.id = ${2}`,
  /** status, next attempt, completed, the attempt (JSON), tenant, id, expected attempts. */
  /** tenant, id, expected attempts: the history of the delivery while it is pending with that many attempts. */
  pendingHistory: sql`SELECT history FROM ${DELIVERIES} WHERE tenant_id = ${1} AND id = ${2} AND status = 'pending' AND attempts = ${3}`,
  /** status, next attempt, completed, the history (JSON), tenant, id, expected attempts. */
  recordAttempt: sql`UPDATE ${DELIVERIES} SET attempts = attempts + 1, status = ${1}, next_attempt_at = ${2}, completed_at = ${3}, history = ${4} WHERE tenant_id = ${5} AND id = ${6} AND status = 'pending' AND attempts = ${7}`,
  restartDelivery: sql`UPDATE ${DELIVERIES} SET status = 'pending', attempts = 0, next_attempt_at = ${1}, completed_at = NULL WHERE tenant_id = ${2} AND id = ${3} AND status = 'failed'`,
  /** Rows another instance is purging are skipped, not waited for. */
  purgeDeliveries: sql`DELETE FROM ${DELIVERIES} WHERE ${DELIVERY_KEY} IN (SELECT ${DELIVERY_KEY_COLUMNS} FROM ${DELIVERIES} WHERE completed_at <= ${1} ORDER BY completed_at LIMIT ${2}${lock('update skip locked')})`,
  ...listStatementsByName(LISTS),
};

/** Statements of dialects that lock rows (PostgreSQL) only. */
export const WEBHOOKS_LOCKING_SQL = {
  /** status, next attempt, completed, the attempt (JSON), tenant, id, expected attempts. */
  recordAttemptAppending: sql`UPDATE ${DELIVERIES} SET attempts = attempts + 1, status = ${1}, next_attempt_at = ${2}, completed_at = ${3}, history = ${APPENDED_HISTORY} WHERE tenant_id = ${5} AND id = ${6} AND status = 'pending' AND attempts = ${7}`,
};

const SQL = { ...WEBHOOKS_SQL, ...WEBHOOKS_LOCKING_SQL };

/** Webhooks, their secret and deliveries (store-parts.ts, area `webhooks`). */
export const WEBHOOKS_AREA: AreaOperations<'webhooks'> = {
  createWebhook: operation('statement', function* (_d, w) {
    const { changes } = yield query(SQL.insertWebhook, w.tenantId, w.id, w.name, w.url, JSON.stringify(w.events), w.createdBy, w.createdAt, w.modifiedBy, w.modifiedAt);
    return changes === 0 ? 'exists' : 'created';
  }),
  getWebhook: operation('statement', function* (d, tenantId, id) {
    const row = (yield query(SQL.getWebhook, tenantId, id)).rows[0];
    return row === undefined ? null : toWebhook(d, row);
  }),
  listWebhooks: operation('statement', function* (d, tenantId, page) {
    return yield* pageSteps(LISTS.webhooks, [tenantId], page, (row) => toWebhook(d, row));
  }),
  listAllWebhooks: operation('statement', function* (d, tenantId, limit) {
    return (yield query(SQL.allWebhooks, tenantId, checkLimit(limit))).rows.map((row) => toWebhook(d, row));
  }),
  updateWebhook: operation('statement', function* (_d, w) {
    return (yield query(SQL.updateWebhook, w.name, w.url, JSON.stringify(w.events), w.modifiedBy, w.modifiedAt, w.tenantId, w.id)).changes === 1;
  }),
  deleteWebhook: operation('statement', function* (_d, tenantId, id) {
    return (yield query(SQL.deleteWebhook, tenantId, id)).changes === 1;
  }),

  getWebhookSecret: operation('statement', function* (_d, tenantId) {
    const row = (yield query(SQL.getSecret, tenantId)).rows[0];
    return row === undefined
      ? null
      : { tenantId: row['tenant_id'] as string, sealed: row['sealed'] as Buffer, version: row['version'] as number, updatedAt: row['updated_at'] as number };
  }),
  putWebhookSecret: operation('statement', function* (_d, record, expectedVersion) {
    const { tenantId, sealed, version, updatedAt } = record;
    const written =
      expectedVersion === null
        ? yield query(SQL.insertSecret, tenantId, sealed, version, updatedAt)
        : yield query(SQL.replaceSecret, sealed, version, updatedAt, tenantId, expectedVersion);
    return written.changes === 1;
  }),

  createWebhookDelivery: operation('statement', function* (_d, v) {
    const { changes } = yield query(
      SQL.insertDelivery,
      v.tenantId,
      v.id,
      v.webhookId,
      v.requestId,
      v.eventType,
      v.url,
      v.payload,
      v.status,
      v.attempts,
      JSON.stringify(v.history),
      v.nextAttemptAt,
      v.createdAt,
      v.completedAt,
    );
    return changes === 0 ? 'exists' : 'created';
  }),
  getWebhookDelivery: operation('statement', function* (d, tenantId, id) {
    const row = (yield query(SQL.getDelivery, tenantId, id)).rows[0];
    return row === undefined ? null : toDelivery(d, row);
  }),
  listWebhookDeliveries: operation('statement', function* (d, tenantId, filter, page) {
    const map = (row: Row) => toDelivery(d, row);
    const { webhookId, requestId } = filter;
    if (webhookId === undefined)
      return yield* requestId === undefined ? pageSteps(LISTS.deliveries, [tenantId], page, map) : pageSteps(LISTS.deliveriesOfRequest, [tenantId, requestId], page, map);
    return yield* requestId === undefined
      ? pageSteps(LISTS.deliveriesOfWebhook, [tenantId, webhookId], page, map)
      : pageSteps(LISTS.deliveriesOfBoth, [tenantId, webhookId, requestId], page, map);
  }),
  recordWebhookAttempt: operation(
    (d) => (locksRows(d) ? 'statement' : 'write'),
    function* (d, tenantId, id, expectedAttempts, attempt, outcome) {
      const { status, nextAttemptAt, completedAt } = outcome;
      if (locksRows(d)) return (yield query(SQL.recordAttemptAppending, status, nextAttemptAt, completedAt, JSON.stringify(attempt), tenantId, id, expectedAttempts)).changes === 1;
      const row = (yield query(SQL.pendingHistory, tenantId, id, expectedAttempts)).rows[0];
      if (row === undefined) return false;
      const history = [...d.json<WebhookAttempt[]>(row['history']), attempt].slice(-MAX_WEBHOOK_HISTORY);
      return (yield query(SQL.recordAttempt, status, nextAttemptAt, completedAt, JSON.stringify(history), tenantId, id, expectedAttempts)).changes === 1;
    },
  ),
  restartWebhookDelivery: operation('statement', function* (_d, tenantId, id, now) {
    return (yield query(SQL.restartDelivery, now, tenantId, id)).changes === 1;
  }),
  purgeWebhookDeliveries: operation('statement', function* (_d, before, limit) {
    return (yield query(SQL.purgeDeliveries, before, checkLimit(limit))).changes;
  }),
};
