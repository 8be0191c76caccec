import { randomUUID } from 'node:crypto';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Store, WebhookRecord } from '../storage/store.js';
import { formatIso } from '../common/time.js';
import type { Deliveries } from './deliveries.js';
import type { EventData, EventType } from './webhook-events.js';
import { SharedLoads } from '../common/shared-loads.js';

/** Most webhooks per tenant (create refuses more); also the most an event is matched against. */
export const MAX_WEBHOOKS_PER_TENANT = 50;
/** Past this many cached tenants the cache starts over (a bound, not an expected size). */
const MAX_CACHED_TENANTS = 10_000;

/** What the token, application, sweep and reactor code paths call after a change committed. */
export interface EventSink {
  /**
   * Emits an event of the tenant; settles when every delivery is stored and enqueued (at once when
   * no webhook of the tenant subscribes, known from the cache). It never rejects: the change it
   * reports has committed, so a failure to record the event is logged, not thrown at the caller.
   */
  emit(tenantId: string, type: EventType, data: EventData): Promise<void>;
}

/**
 * Event webhooks' fan-out. Subscriptions are cached per tenant for `cacheMs` (default 1 s), so an
 * event of a tenant without webhooks costs one map lookup; a change through this vault clears the
 * tenant's entry at once, and one made through another instance sharing the database is seen within
 * `cacheMs` (events of that window go to the webhooks as they were). The events of a tenant that
 * find no fresh entry share one read of its subscriptions (under load, every change of the turn
 * the entry lapsed in would otherwise read them); a read begun before a change through this vault
 * answers the events that were waiting for it but is not kept.
 */
export class WebhookEvents implements EventSink {
  #store: Store;
  #clock: Clock;
  #logger: Logger;
  #deliveries: Deliveries;
  #cacheMs: number;
  #cache = new Map<string, { webhooks: WebhookRecord[]; types: Set<string>; until: number }>();
  /** The read of a tenant's subscriptions under way, shared by the events that wait for it. */
  #loading = new SharedLoads<string, WebhookRecord[]>();

  constructor(deps: { store: Store; clock: Clock; logger: Logger; deliveries: Deliveries; cacheMs?: number }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#deliveries = deps.deliveries;
    this.#cacheMs = deps.cacheMs ?? 1000;
  }

  async emit(tenantId: string, type: EventType, data: EventData): Promise<void> {
    const now = this.#clock.now();
    const cached = this.#cache.get(tenantId);
    if (cached !== undefined && now < cached.until) {
      if (cached.types.has(type)) await this.#fanOut(tenantId, cached.webhooks, type, data, now);
      return;
    }
    try {
      await this.#fanOut(tenantId, await this.#load(tenantId, now), type, data, now);
    } catch (error) {
      this.#logger.error('webhook event not recorded', { tenantId, type, error: (error as Error).name });
    }
  }

  /** Forgets the tenant's cached subscriptions (after a webhook change through this vault). */
  invalidate(tenantId: string): void {
    this.#cache.delete(tenantId);
    this.#loading.forget(tenantId);
  }

  #load(tenantId: string, now: number): Promise<WebhookRecord[]> {
    return this.#loading.load(
      tenantId,
      () => this.#store.listAllWebhooks(tenantId, MAX_WEBHOOKS_PER_TENANT),
      (webhooks) => {
        if (this.#cache.size >= MAX_CACHED_TENANTS) this.#cache.clear();
        this.#cache.set(tenantId, { webhooks, types: new Set(webhooks.flatMap((w) => w.events)), until: now + this.#cacheMs });
      },
    );
  }

  async #fanOut(tenantId: string, webhooks: readonly WebhookRecord[], type: EventType, data: EventData, now: number): Promise<void> {
    const matching = webhooks.filter((w) => w.events.includes(type));
    if (matching.length === 0) return;
    const payload = { id: `evt_${randomUUID().replaceAll('-', '')}`, type, timestamp: formatIso(now), data: { ...data } };
    for (const webhook of matching) {
      try {
        await this.#deliveries.create({ tenantId, webhookId: webhook.id, requestId: null, url: null, payload });
      } catch (error) {
        this.#logger.error('webhook event not recorded', { tenantId, type, webhookId: webhook.id, error: (error as Error).name });
      }
    }
  }
}
