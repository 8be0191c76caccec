// Bodies are typed as a valid one is; the service validates them.
import type { WebhookRequest } from '../../webhooks/webhook-input.js';
import type { DeliveryQuery } from '../../webhooks/webhook-service.js';
import { requirePermission } from '../../auth/caller.js';
import { EVENT_TYPES } from '../../webhooks/webhook-events.js';
import { pageQuery } from '../query.js';
import { type AuthenticatedRoute, PAGING } from './route.js';

const TAG = 'Webhooks';

/** GET /webhook-deliveries: `webhook_id`, `request_id`, paging. */
function deliveryQuery(params: URLSearchParams): DeliveryQuery {
  const query: DeliveryQuery = pageQuery(params);
  for (const name of ['webhook_id', 'request_id'] as const) {
    const value = params.get(name);
    if (value !== null) query[name] = value;
  }
  return query;
}

/** Event webhooks, the signing secret and deliveries (management applications). Each route is one WebhookService call. */
export const webhookRoutes: AuthenticatedRoute[] = [
  {
    method: 'POST',
    path: '/webhooks',
    operationId: 'createWebhook',
    auth: true,
    permission: 'webhook:create',
    status: 201,
    body: 'json',
    docs: { summary: 'Create an event webhook', tag: TAG, requestSchema: 'WebhookRequest', responseSchema: 'Webhook' },
    handle: ({ vault, caller, body }) => vault.webhooks.create(caller, body as WebhookRequest),
  },
  {
    method: 'GET',
    path: '/webhooks',
    operationId: 'listWebhooks',
    auth: true,
    permission: 'webhook:read',
    status: 200,
    docs: { summary: 'List event webhooks', tag: TAG, responseSchema: 'WebhookList', query: [...PAGING] },
    handle: ({ vault, caller, query }) => vault.webhooks.list(caller, pageQuery(query)),
  },
  {
    // Before /webhooks/{id}, so "event-types" is not read as an id.
    method: 'GET',
    path: '/webhooks/event-types',
    operationId: 'listWebhookEventTypes',
    auth: true,
    permission: 'webhook:read',
    status: 200,
    docs: { summary: 'The event types a webhook may subscribe to', tag: TAG, responseSchema: 'WebhookEventTypeList' },
    handle: async ({ caller }) => {
      requirePermission(caller, 'webhook:read');
      return [...EVENT_TYPES];
    },
  },
  {
    method: 'GET',
    path: '/webhooks/{id}',
    operationId: 'getWebhook',
    auth: true,
    permission: 'webhook:read',
    status: 200,
    docs: { summary: 'Get an event webhook', tag: TAG, responseSchema: 'Webhook' },
    handle: ({ vault, caller, params }) => vault.webhooks.get(caller, params['id']!),
  },
  {
    method: 'PUT',
    path: '/webhooks/{id}',
    operationId: 'updateWebhook',
    auth: true,
    permission: 'webhook:update',
    status: 200,
    body: 'json',
    docs: { summary: 'Replace an event webhook’s name, url and events', tag: TAG, requestSchema: 'WebhookRequest', responseSchema: 'Webhook' },
    handle: ({ vault, caller, params, body }) => vault.webhooks.update(caller, params['id']!, body as WebhookRequest),
  },
  {
    method: 'DELETE',
    path: '/webhooks/{id}',
    operationId: 'deleteWebhook',
    auth: true,
    permission: 'webhook:delete',
    status: 204,
    docs: { summary: 'Delete an event webhook', tag: TAG },
    handle: ({ vault, caller, params }) => vault.webhooks.delete(caller, params['id']!),
  },
  {
    method: 'GET',
    path: '/webhooks/{id}/deliveries',
    operationId: 'listWebhookDeliveries',
    auth: true,
    permission: 'webhook:read',
    status: 200,
    docs: { summary: 'List the deliveries of an event webhook, with their attempts', tag: TAG, responseSchema: 'WebhookDeliveryList', query: [...PAGING] },
    handle: ({ vault, caller, params, query }) => vault.webhooks.deliveries(caller, params['id']!, pageQuery(query)),
  },
  {
    method: 'GET',
    path: '/webhook-deliveries',
    operationId: 'listAllWebhookDeliveries',
    auth: true,
    permission: 'webhook:read',
    status: 200,
    docs: {
      summary: 'List deliveries: event webhooks’ and async reactor callbacks’',
      tag: TAG,
      responseSchema: 'WebhookDeliveryList',
      query: [
        { name: 'webhook_id', description: 'Only the deliveries of this webhook.' },
        { name: 'request_id', description: 'Only the callback deliveries of this async reactor request.' },
        ...PAGING,
      ],
    },
    handle: ({ vault, caller, query }) => vault.webhooks.listDeliveries(caller, deliveryQuery(query)),
  },
  {
    method: 'GET',
    path: '/webhook-deliveries/{id}',
    operationId: 'getWebhookDelivery',
    auth: true,
    permission: 'webhook:read',
    status: 200,
    docs: { summary: 'Get a delivery and its attempts', tag: TAG, responseSchema: 'WebhookDelivery' },
    handle: ({ vault, caller, params }) => vault.webhooks.getDelivery(caller, params['id']!),
  },
  {
    method: 'POST',
    path: '/webhook-deliveries/{id}/retry',
    operationId: 'retryWebhookDelivery',
    auth: true,
    permission: 'webhook:update',
    status: 200,
    body: 'optional-json',
    docs: { summary: 'Retry a failed delivery (a new round of attempts)', tag: TAG, responseSchema: 'WebhookDelivery', extraStatuses: [409] },
    handle: ({ vault, caller, params }) => vault.webhooks.retryDelivery(caller, params['id']!),
  },
  {
    method: 'GET',
    path: '/webhook-secret',
    operationId: 'getWebhookSecret',
    auth: true,
    permission: 'application:read',
    status: 200,
    docs: { summary: 'Get the tenant’s webhook signing secret (created on first need; a tenant administrator only)', tag: TAG, responseSchema: 'WebhookSecret' },
    handle: ({ vault, caller }) => vault.webhooks.secret(caller),
  },
  {
    method: 'POST',
    path: '/webhook-secret/rotate',
    operationId: 'rotateWebhookSecret',
    auth: true,
    permission: 'application:update',
    status: 200,
    body: 'optional-json',
    docs: { summary: 'Rotate the signing secret (the previous one also signs for 24 hours; a tenant administrator only)', tag: TAG, responseSchema: 'WebhookSecret' },
    handle: ({ vault, caller }) => vault.webhooks.rotateSecret(caller),
  },
];
