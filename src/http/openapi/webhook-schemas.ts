import { EVENT_TYPES } from '../../webhooks/webhook-events.js';
import type { Schema } from './schema-helpers.js';

/** Response schemas of the webhook routes (routes/webhooks.ts); their request body is generated (request-schemas.ts). */
export const WEBHOOK_SCHEMAS: Readonly<Record<string, Schema>> = {
  Webhook: {
    type: 'object',
    required: ['id', 'tenant_id', 'status', 'name', 'url', 'events', 'created_at'],
    properties: {
      id: { type: 'string', format: 'uuid' },
      tenant_id: { type: 'string', format: 'uuid' },
      status: { const: 'enabled', description: 'Always enabled: a webhook that keeps failing is retried, then its deliveries fail; it is never switched off.' },
      name: { type: 'string' },
      url: { type: 'string', description: 'Where events are POSTed, signed per Standard Webhooks.' },
      events: { type: 'array', items: { enum: [...EVENT_TYPES] } },
      created_by: { type: 'string', format: 'uuid' },
      created_at: { type: 'string', format: 'date-time' },
      modified_by: { type: 'string', format: 'uuid' },
      modified_at: { type: 'string', format: 'date-time' },
    },
  },
  WebhookEventTypeList: { type: 'array', items: { enum: [...EVENT_TYPES] } },
  WebhookList: {
    type: 'object',
    required: ['pagination', 'data'],
    properties: { pagination: { $ref: '#/components/schemas/Pagination' }, data: { type: 'array', items: { $ref: '#/components/schemas/Webhook' } } },
  },
  WebhookSecret: {
    type: 'object',
    required: ['secret', 'created_at'],
    properties: {
      secret: { type: 'string', description: 'The tenant’s Standard Webhooks signing secret, whsec_…' },
      created_at: { type: 'string', format: 'date-time' },
    },
  },
  WebhookDelivery: {
    type: 'object',
    required: ['id', 'event_type', 'status', 'attempts', 'created_at', 'history'],
    properties: {
      id: { type: 'string', description: 'The webhook-id header of every attempt.' },
      webhook_id: { type: 'string', format: 'uuid' },
      request_id: { type: 'string', description: 'The async reactor request of a callback delivery.' },
      event_type: { type: 'string' },
      status: { enum: ['pending', 'succeeded', 'failed'] },
      attempts: { type: 'integer', description: 'Attempts in the current round (a retry by hand starts a new one).' },
      next_attempt_at: { type: 'string', format: 'date-time' },
      created_at: { type: 'string', format: 'date-time' },
      completed_at: { type: 'string', format: 'date-time' },
      history: {
        type: 'array',
        items: {
          type: 'object',
          required: ['at', 'status', 'error', 'duration_ms'],
          properties: {
            at: { type: 'string', format: 'date-time' },
            status: { type: ['integer', 'null'] },
            error: { type: ['string', 'null'] },
            duration_ms: { type: 'integer' },
          },
        },
      },
    },
  },
  WebhookDeliveryList: {
    type: 'object',
    required: ['pagination', 'data'],
    properties: { pagination: { $ref: '#/components/schemas/Pagination' }, data: { type: 'array', items: { $ref: '#/components/schemas/WebhookDelivery' } } },
  },
};
