/**
 * Records of event webhooks, the per-tenant signing secret and webhook deliveries (src/webhooks/).
 * Kept beside store.ts so that the Store interface stays readable; the Store methods that use them
 * are in `WebhookStore`.
 */
import type { Inserted } from './store-answers.js';
import type { PageRequest, PageResult } from './store-paging.js';

/** An event webhook: where to POST which events of the tenant. */
export interface WebhookRecord {
  tenantId: string;
  id: string;
  name: string;
  url: string;
  /** Event types (webhook-events.ts), distinct. */
  events: string[];
  createdBy: string | null;
  createdAt: number;
  modifiedBy: string | null;
  modifiedAt: number | null;
}

/**
 * The tenant's signing secret(s), sealed with the tenant's data key (KeyRing.sealRecord). `version`
 * counts rotations and makes replacing it a compare-and-set.
 */
export interface WebhookSecretRecord {
  tenantId: string;
  /** The sealed JSON `{ current, previous, previousUntil }` (previous: the secret before the last rotation). */
  sealed: Uint8Array;
  version: number;
  updatedAt: number;
}

/** One delivery attempt: what happened, in our words (never the receiver's body). */
export interface WebhookAttempt {
  at: number;
  /** HTTP status answered, or null when there was no response (timeout, refused, connection error). */
  status: number | null;
  /** Why it did not succeed; null on success. */
  error: string | null;
  durationMs: number;
}

export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed';

/**
 * One message to one URL: an event for one webhook, or the callback of an async reactor run. Its id
 * is the `webhook-id` header, stable across retries.
 */
export interface WebhookDeliveryRecord {
  tenantId: string;
  id: string;
  /** The event webhook, or null for a callback delivery. */
  webhookId: string | null;
  /** The async reactor request a callback belongs to, else null. */
  requestId: string | null;
  eventType: string;
  /** A callback's URL; null for event webhooks (their webhook's current URL is used). */
  url: string | null;
  /** The JSON body sealed with the tenant's data key (callbacks carry reactor results). */
  payload: Uint8Array;
  status: WebhookDeliveryStatus;
  /** Attempts in the current round (a retry by hand starts a new round). */
  attempts: number;
  /** Every attempt, oldest first (the most recent 50). */
  history: WebhookAttempt[];
  nextAttemptAt: number | null;
  createdAt: number;
  completedAt: number | null;
}

export interface WebhookDeliveryFilter {
  webhookId?: string;
  requestId?: string;
}

/** The outcome of an attempt to record with it (see WebhookStore.recordWebhookAttempt). */
export interface WebhookAttemptOutcome {
  status: WebhookDeliveryStatus;
  nextAttemptAt: number | null;
  completedAt: number | null;
}

/** The attempts kept per delivery. */
export const MAX_WEBHOOK_HISTORY = 50;

/** Store methods of webhooks (part of Store). Every one is scoped by tenant. */
export interface WebhookStore {
  /** Inserts; 'exists' (nothing written) when the id is taken in the tenant. */
  createWebhook(webhook: WebhookRecord): Promise<Inserted>;
  getWebhook(tenantId: string, id: string): Promise<WebhookRecord | null>;
  /** In creation order. */
  listWebhooks(tenantId: string, page: PageRequest): Promise<PageResult<WebhookRecord>>;
  /** Every webhook of the tenant (at most `limit`), in creation order: the subscriptions events are matched against. */
  listAllWebhooks(tenantId: string, limit: number): Promise<WebhookRecord[]>;
  /** Replaces name, url and events; false when missing. */
  updateWebhook(webhook: WebhookRecord): Promise<boolean>;
  /** Deletes the webhook (its deliveries stay, to be queried until they are purged); false when missing. */
  deleteWebhook(tenantId: string, id: string): Promise<boolean>;

  getWebhookSecret(tenantId: string): Promise<WebhookSecretRecord | null>;
  /**
   * Compare-and-set: with `expectedVersion` null, inserts unless the tenant has a secret; otherwise
   * replaces it only while its version is still `expectedVersion`. False when another writer won.
   */
  putWebhookSecret(record: WebhookSecretRecord, expectedVersion: number | null): Promise<boolean>;

  /** Inserts a delivery; 'exists' (nothing written) when the id is taken in the tenant. */
  createWebhookDelivery(delivery: WebhookDeliveryRecord): Promise<Inserted>;
  getWebhookDelivery(tenantId: string, id: string): Promise<WebhookDeliveryRecord | null>;
  /** Deliveries of the tenant matching the filter, in creation order. */
  listWebhookDeliveries(tenantId: string, filter: WebhookDeliveryFilter, page: PageRequest): Promise<PageResult<WebhookDeliveryRecord>>;
  /**
   * Atomically appends `attempt` to the history (keeping the last MAX_WEBHOOK_HISTORY), counts it
   * and applies `outcome`, only if the delivery is pending with `expectedAttempts` attempts in this
   * round: two workers holding the same delivery (a lease that ran out) cannot both record the
   * same attempt. True when written.
   */
  recordWebhookAttempt(tenantId: string, id: string, expectedAttempts: number, attempt: WebhookAttempt, outcome: WebhookAttemptOutcome): Promise<boolean>;
  /** Atomically: a failed delivery becomes pending for a new round (attempts 0, next attempt at `now`); false otherwise. */
  restartWebhookDelivery(tenantId: string, id: string, now: number): Promise<boolean>;
  /** Removes up to `limit` deliveries (any tenant) completed at or before `before`. Returns how many. */
  purgeWebhookDeliveries(before: number, limit: number): Promise<number>;
}
