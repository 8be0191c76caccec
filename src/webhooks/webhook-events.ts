/**
 * The events a webhook may subscribe to. Payloads carry ids, types and times only: never token data,
 * metadata (its values may be sensitive even though they should not be), containers, reactor
 * results or error details. A receiver that needs more asks the API with its own key.
 */
export const EVENT_TYPES = [
  'token.created',
  'token.updated',
  'token.deleted',
  'token.expired',
  'reactor.completed',
  'reactor.failed',
  'application.created',
  'application.updated',
  'application.deleted',
  'application.key_created',
  'application.key_deleted',
  'proxy.created',
  'proxy.updated',
  'proxy.deleted',
  'proxy.key_rotated',
  'proxy.confirmed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** What an event says (snake_case ids, types and ISO times only). */
export type EventData = Readonly<Record<string, string | null>>;

/** The JSON body every webhook (event or callback) carries. */
export interface WebhookPayload {
  /** The event's id (`evt_…`); the same for every webhook it goes to. The `webhook-id` header names the delivery. */
  id: string;
  type: string;
  /** When the event happened (ISO 8601). */
  timestamp: string;
  data: Record<string, unknown>;
}
