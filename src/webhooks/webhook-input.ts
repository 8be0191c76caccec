import * as v from 'valibot';
import { ValidationError } from '../errors/errors.js';
import { validationFromIssues } from '../validation/issues.js';
import { EVENT_TYPES, type EventType } from './webhook-events.js';
import { checkWebhookUrl } from './webhook-url.js';

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const WebhookSchema = v.strictObject({
  name: v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'is required'), v.maxLength(200, 'must be at most 200 characters')),
  url: v.string('must be an absolute http or https URL'),
  events: v.pipe(
    v.array(v.picklist(EVENT_TYPES, `is not a known event; one of ${EVENT_TYPES.join(', ')}`), 'must be an array of event types'),
    v.minLength(1, 'must list at least one event'),
    v.maxLength(EVENT_TYPES.length, `must list at most ${EVENT_TYPES.length} events`),
  ),
});

export interface WebhookInput {
  name: string;
  url: string;
  events: EventType[];
}

/** Validates a create or replace (PUT) body `{ name, url, events }`; the URL is checked for SSRF (webhook-url.ts). */
export function parseWebhookInput(body: unknown, allowPrivateNetwork: boolean): WebhookInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw ValidationError.field('body', 'must be a JSON object');
  const result = v.safeParse(WebhookSchema, body);
  if (!result.success) throw validationFromIssues(result.issues);
  const { name, url, events } = result.output;
  return { name, url: checkWebhookUrl(url, 'url', allowPrivateNetwork), events: [...new Set(events)] };
}

/** The Create or Replace Webhook body as a caller sends it (validated by the service). */
export type WebhookRequest = v.InferInput<typeof WebhookSchema>;
