import { randomUUID } from 'node:crypto';
import { refuseNul } from '../validation/no-nul.js';
import type { AuditLog } from '../audit/audit.js';
import { type Caller, isTenantAdministrator, requirePermission } from '../auth/caller.js';
import type { Clock } from '../common/clock.js';
import { AuthorizationError, ConflictError, NotFoundError, ValidationError, requireCreated } from '../errors/errors.js';
import { type PageQuery, type Paginated, parsePage, toPaginated } from '../common/pagination.js';
import type { Store, WebhookRecord } from '../storage/store.js';
import { formatIso } from '../common/time.js';
import type { Deliveries } from './deliveries.js';
import type { SigningSecrets } from './signing-secrets.js';
import { MAX_WEBHOOKS_PER_TENANT, type WebhookEvents } from './webhook-events-emitter.js';
import { type WebhookRequest, parseWebhookInput } from './webhook-input.js';
import { type DeliveryView, type WebhookView, deliveryView, webhookView } from './webhook-views.js';

export interface DeliveryQuery extends PageQuery {
  /** Only the deliveries of this webhook. */
  webhook_id?: string;
  /** Only the callback deliveries of this async reactor request. */
  request_id?: string;
}

export interface WebhookServiceDeps {
  store: Store;
  clock: Clock;
  audit: AuditLog;
  secrets: SigningSecrets;
  deliveries: Deliveries;
  events: WebhookEvents;
  allowPrivateNetwork: boolean;
}

/**
 * Event webhooks, the tenant's signing secret and deliveries (`vault.webhooks`). Management
 * permissions: webhook:create|read|update|delete for webhooks and deliveries. The signing secret is
 * read and rotated by a tenant administrator only: it signs every event and every asynchronous
 * reactor callback of the tenant, so whoever holds it can forge them to any receiver (docs/authority.md).
 *
 * @example
 * const hook = await vault.webhooks.create(admin, { name: 'audit', url: 'https://example.com/hooks', events: ['token.created'] });
 * const { secret } = await vault.webhooks.secret(admin); // whsec_…, to verify signatures
 */
export class WebhookService {
  #d: WebhookServiceDeps;

  constructor(deps: WebhookServiceDeps) {
    this.#d = deps;
  }

  /** Creates a webhook (webhook:create). At most 50 per tenant. */
  async create(caller: Caller, body: WebhookRequest): Promise<WebhookView> {
    return this.#d.audit.guard(caller, 'webhook:create', null, async () => {
      requirePermission(caller, 'webhook:create');
      refuseNul(body, '');
      const input = parseWebhookInput(body, this.#d.allowPrivateNetwork);
      // Checked before the insert, not with it: racing creates may pass the bound by a few.
      if ((await this.#d.store.listAllWebhooks(caller.tenantId, MAX_WEBHOOKS_PER_TENANT)).length >= MAX_WEBHOOKS_PER_TENANT) {
        throw new ConflictError(`The tenant has ${MAX_WEBHOOKS_PER_TENANT} webhooks, the most it may have; delete one first`);
      }
      const record: WebhookRecord = {
        tenantId: caller.tenantId,
        id: randomUUID(),
        ...input,
        createdBy: caller.applicationId,
        createdAt: this.#d.clock.now(),
        modifiedBy: null,
        modifiedAt: null,
      };
      requireCreated(await this.#d.store.createWebhook(record), 'Webhook', record.id);
      this.#changed(caller, 'webhook:create', record.id);
      return webhookView(record);
    });
  }

  async get(caller: Caller, id: string): Promise<WebhookView> {
    requirePermission(caller, 'webhook:read');
    refuseNul(id, 'id');
    return webhookView(await this.#find(caller, id));
  }

  async list(caller: Caller, query: PageQuery = {}): Promise<Paginated<WebhookView>> {
    requirePermission(caller, 'webhook:read');
    const page = parsePage(query);
    return toPaginated(page, await this.#d.store.listWebhooks(caller.tenantId, page), webhookView);
  }

  /** Replaces name, url and events (webhook:update). Pending deliveries go to the new URL. */
  async update(caller: Caller, id: string, body: WebhookRequest): Promise<WebhookView> {
    return this.#d.audit.guard(caller, 'webhook:update', id, async () => {
      requirePermission(caller, 'webhook:update');
      refuseNul(id, 'id');
      refuseNul(body, '');
      const current = await this.#find(caller, id);
      const input = parseWebhookInput(body, this.#d.allowPrivateNetwork);
      const next: WebhookRecord = { ...current, ...input, modifiedBy: caller.applicationId, modifiedAt: this.#d.clock.now() };
      if (!(await this.#d.store.updateWebhook(next))) throw new NotFoundError('Webhook', id);
      this.#changed(caller, 'webhook:update', id);
      return webhookView(next);
    });
  }

  /** Deletes a webhook (webhook:delete); its pending deliveries fail at their next attempt. */
  async delete(caller: Caller, id: string): Promise<void> {
    await this.#d.audit.guard(caller, 'webhook:delete', id, async () => {
      requirePermission(caller, 'webhook:delete');
      refuseNul(id, 'id');
      if (!(await this.#d.store.deleteWebhook(caller.tenantId, String(id)))) throw new NotFoundError('Webhook', String(id));
      this.#changed(caller, 'webhook:delete', String(id));
    });
  }

  /** The tenant's signing secret (application:read, and a tenant administrator), created on first need. */
  async secret(caller: Caller): Promise<{ secret: string; created_at: string }> {
    return this.#d.audit.guard(caller, 'webhook-secret:read', null, async () => {
      requirePermission(caller, 'application:read');
      requireAdministrator(caller, 'Reading');
      const { secret, updatedAt } = await this.#d.secrets.current(caller.tenantId);
      this.#record(caller, 'webhook-secret:read', null);
      return { secret, created_at: formatIso(updatedAt) };
    });
  }

  /** Rotates the signing secret (application:update, and a tenant administrator); the previous one also signs for 24 hours. */
  async rotateSecret(caller: Caller): Promise<{ secret: string; created_at: string }> {
    return this.#d.audit.guard(caller, 'webhook-secret:rotate', null, async () => {
      requirePermission(caller, 'application:update');
      requireAdministrator(caller, 'Rotating');
      const { secret, updatedAt } = await this.#d.secrets.rotate(caller.tenantId);
      this.#record(caller, 'webhook-secret:rotate', null);
      return { secret, created_at: formatIso(updatedAt) };
    });
  }

  /** Deliveries of one webhook (webhook:read), oldest first. */
  async deliveries(caller: Caller, webhookId: string, query: PageQuery = {}): Promise<Paginated<DeliveryView>> {
    requirePermission(caller, 'webhook:read');
    refuseNul(webhookId, 'id');
    await this.#find(caller, webhookId);
    const page = parsePage(query);
    return toPaginated(page, await this.#d.store.listWebhookDeliveries(caller.tenantId, { webhookId }, page), deliveryView);
  }

  /** Every delivery of the tenant (webhook:read), event and callback, filtered by webhook or reactor request. */
  async listDeliveries(caller: Caller, query: DeliveryQuery = {}): Promise<Paginated<DeliveryView>> {
    requirePermission(caller, 'webhook:read');
    refuseNul({ webhook_id: query.webhook_id, request_id: query.request_id }, '');
    const page = parsePage(query);
    const filter: { webhookId?: string; requestId?: string } = {};
    if (query.webhook_id !== undefined) filter.webhookId = checkId(query.webhook_id, 'webhook_id');
    if (query.request_id !== undefined) filter.requestId = checkId(query.request_id, 'request_id');
    return toPaginated(page, await this.#d.store.listWebhookDeliveries(caller.tenantId, filter, page), deliveryView);
  }

  /** One delivery (webhook:read). */
  async getDelivery(caller: Caller, id: string): Promise<DeliveryView> {
    requirePermission(caller, 'webhook:read');
    refuseNul(id, 'id');
    const found = typeof id === 'string' ? await this.#d.store.getWebhookDelivery(caller.tenantId, id) : null;
    if (found === null) throw new NotFoundError('Webhook delivery', String(id));
    return deliveryView(found);
  }

  /** Starts a new round of attempts for a failed delivery (webhook:update); 409 unless it failed. */
  async retryDelivery(caller: Caller, id: string): Promise<DeliveryView> {
    return this.#d.audit.guard(caller, 'webhook:retry', id, async () => {
      requirePermission(caller, 'webhook:update');
      refuseNul(id, 'id');
      if (typeof id !== 'string' || (await this.#d.store.getWebhookDelivery(caller.tenantId, id)) === null) throw new NotFoundError('Webhook delivery', String(id));
      if (!(await this.#d.deliveries.restart(caller.tenantId, id))) {
        throw new ConflictError(`Webhook delivery '${id}' has not failed (it is pending or succeeded); only a failed delivery can be retried`);
      }
      this.#record(caller, 'webhook:retry', id);
      return deliveryView((await this.#d.store.getWebhookDelivery(caller.tenantId, id))!);
    });
  }

  async #find(caller: Caller, id: string): Promise<WebhookRecord> {
    const found = typeof id === 'string' ? await this.#d.store.getWebhook(caller.tenantId, id) : null;
    if (found === null) throw new NotFoundError('Webhook', String(id));
    return found;
  }

  #changed(caller: Caller, operation: string, id: string): void {
    this.#d.events.invalidate(caller.tenantId);
    this.#record(caller, operation, id);
  }

  #record(caller: Caller, operation: string, resourceId: string | null): void {
    this.#d.audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation, resourceId, outcome: 'success' });
  }
}

function checkId(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 250) throw ValidationError.field(field, 'must be 1 to 250 characters');
  return value;
}

function requireAdministrator(caller: Caller, action: 'Reading' | 'Rotating'): void {
  if (isTenantAdministrator(caller)) return;
  throw new AuthorizationError(
    `${action} the webhook signing secret is for a tenant administrator (application:create and application:update): ` +
      'the secret signs every webhook of the tenant, so its holder could forge them',
  );
}
