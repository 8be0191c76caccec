import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../audit/audit.js';
import type { Clock } from '../common/clock.js';
import { requireCreated } from '../errors/errors.js';
import type { KeyRing } from '../crypto/key-ring.js';
import type { Logger } from '../common/logger.js';
import type { Store, WebhookDeliveryRecord } from '../storage/store.js';
import type { DeliveryQueue, JobOutcome } from './job-contract.js';
import { MAX_ATTEMPTS, retryDelayMs } from './retry-schedule.js';
import type { SigningSecrets } from './signing-secrets.js';
import type { WebhookPayload } from './webhook-events.js';
import { sendWebhook } from './webhook-sender.js';

/** The job kind of one delivery; its payload is DeliveryJob. */
export const DELIVER_JOB = 'webhook.deliver';
/** The actor of delivery audit entries. */
export const WEBHOOKS_ACTOR = 'system:webhooks';

/** The payload of a `webhook.deliver` job: references only (the body is sealed in the delivery row). */
export interface DeliveryJob {
  tenantId: string;
  deliveryId: string;
}

/** A message to deliver: to an event webhook (its current URL) or to a callback URL. */
export interface NewDelivery {
  tenantId: string;
  webhookId: string | null;
  requestId: string | null;
  url: string | null;
  payload: WebhookPayload;
}

export interface DeliveriesDeps {
  store: Store;
  keys: KeyRing;
  clock: Clock;
  logger: Logger;
  audit: AuditLog;
  secrets: SigningSecrets;
  /** The job queue; a function because the vault builds it after this. */
  queue: () => DeliveryQueue;
  allowPrivateNetwork: boolean;
}

const sealContext = (id: string) => ['webhook-delivery', id];

/** How long a finished delivery (and its sealed body) stays queryable before the sweep removes it. */
export const DELIVERY_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Removes deliveries that finished more than DELIVERY_RETENTION_MS ago (the vault's sweep calls it). */
export async function purgeDeliveries(store: Store, now: number): Promise<number> {
  let removed = 0;
  for (;;) {
    const n = await store.purgeWebhookDeliveries(now - DELIVERY_RETENTION_MS, 500);
    removed += n;
    if (n < 500) return removed;
  }
}

/**
 * Webhook deliveries: one row per message and URL (body sealed with the tenant key, since callbacks
 * carry reactor results), delivered by one `webhook.deliver` job. A 2xx ends it; anything else is
 * retried on the schedule of retry-schedule.ts, and after the last attempt the delivery is failed
 * with an audit entry. Delivery is at least once: `webhook-id` (the delivery id) stays the same
 * across attempts so receivers can de-duplicate.
 */
export class Deliveries {
  #deps: DeliveriesDeps;

  constructor(deps: DeliveriesDeps) {
    this.#deps = deps;
  }

  /** Stores a delivery and enqueues its job; returns its id (`msg_…`). */
  async create(input: NewDelivery): Promise<string> {
    const { store, keys, clock } = this.#deps;
    const id = `msg_${randomUUID().replaceAll('-', '')}`;
    const now = clock.now();
    const payload = await keys.sealRecord(input.tenantId, sealContext(id), Buffer.from(JSON.stringify(input.payload), 'utf8'));
    const record: WebhookDeliveryRecord = {
      tenantId: input.tenantId,
      id,
      webhookId: input.webhookId,
      requestId: input.requestId,
      eventType: input.payload.type,
      url: input.url,
      payload,
      status: 'pending',
      attempts: 0,
      history: [],
      nextAttemptAt: now,
      createdAt: now,
      completedAt: null,
    };
    requireCreated(await store.createWebhookDelivery(record), 'Webhook delivery', record.id);
    await this.#enqueue(input.tenantId, id, now, id);
    return id;
  }

  /** Starts a new round of attempts for a failed delivery now; false when it is not failed. */
  async restart(tenantId: string, id: string): Promise<boolean> {
    const now = this.#deps.clock.now();
    if (!(await this.#deps.store.restartWebhookDelivery(tenantId, id, now))) return false;
    await this.#enqueue(tenantId, id, now, `${id}:${now}`);
    return true;
  }

  /** The `webhook.deliver` job handler: one attempt. */
  readonly handle = async (payload: unknown): Promise<JobOutcome> => {
    const { tenantId, deliveryId } = (payload ?? {}) as Partial<DeliveryJob>;
    if (typeof tenantId !== 'string' || typeof deliveryId !== 'string') return { status: 'done' };
    const { store, keys, clock, secrets, allowPrivateNetwork } = this.#deps;
    const delivery = await store.getWebhookDelivery(tenantId, deliveryId);
    // Finished (or purged) meanwhile, for example by a worker whose lease on this job ran out.
    if (delivery === null || delivery.status !== 'pending') return { status: 'done' };
    let url = delivery.url;
    if (delivery.webhookId !== null) url = (await store.getWebhook(tenantId, delivery.webhookId))?.url ?? null;
    const body = (await keys.openRecord(tenantId, sealContext(deliveryId), delivery.payload)).toString('utf8');
    const result =
      url === null
        ? { ok: false, attempt: { at: clock.now(), status: null, error: 'the webhook was deleted', durationMs: 0 } }
        : await sendWebhook(url, body, await secrets.sign(tenantId, deliveryId, body), { allowPrivateNetwork, now: clock.now() });
    const attempt = delivery.attempts + 1;
    const now = clock.now();
    if (result.ok) {
      await store.recordWebhookAttempt(tenantId, deliveryId, delivery.attempts, result.attempt, { status: 'succeeded', nextAttemptAt: null, completedAt: now });
      return { status: 'done' };
    }
    if (attempt >= MAX_ATTEMPTS || url === null) {
      const recorded = await store.recordWebhookAttempt(tenantId, deliveryId, delivery.attempts, result.attempt, { status: 'failed', nextAttemptAt: null, completedAt: now });
      if (recorded) {
        this.#deps.audit.record({ tenantId, actor: WEBHOOKS_ACTOR, operation: 'webhook:deliver', resourceId: deliveryId, outcome: 'failure', detail: 'delivery_failed' });
        this.#deps.logger.warn('webhook delivery failed', { tenantId, deliveryId, attempts: attempt });
      }
      return { status: 'done' };
    }
    const runAt = now + retryDelayMs(attempt);
    const recorded = await store.recordWebhookAttempt(tenantId, deliveryId, delivery.attempts, result.attempt, { status: 'pending', nextAttemptAt: runAt, completedAt: null });
    // Not recorded: another worker already made this attempt; its job carries the delivery on.
    return recorded ? { status: 'retry', runAt, error: result.attempt.error ?? 'failed' } : { status: 'done' };
  };

  #enqueue(tenantId: string, deliveryId: string, runAt: number, key: string): Promise<string | null> {
    const job: DeliveryJob = { tenantId, deliveryId };
    return this.#deps.queue().enqueue({ kind: DELIVER_JOB, tenantId, payload: job, runAt, key });
  }
}
