import type { WebhookDeliveryRecord, WebhookRecord } from '../storage/store.js';
import { formatIso } from '../common/time.js';

/** A webhook as the API returns it. */
export interface WebhookView {
  id: string;
  tenant_id: string;
  /**
   * Basis Theory's Webhook has a status (its SDK's type requires it). The vault never disables a
   * webhook (failing deliveries are retried, then marked failed), so it is always `enabled`.
   */
  status: 'enabled';
  name: string;
  url: string;
  events: string[];
  created_by?: string;
  created_at: string;
  modified_by?: string;
  modified_at?: string;
}

/** A delivery as the API returns it: status and attempts, never the body (a callback's carries a reactor result). */
export interface DeliveryView {
  id: string;
  webhook_id?: string;
  request_id?: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  next_attempt_at?: string;
  created_at: string;
  completed_at?: string;
  history: { at: string; status: number | null; error: string | null; duration_ms: number }[];
}

export function webhookView(w: WebhookRecord): WebhookView {
  const out: WebhookView = { id: w.id, tenant_id: w.tenantId, status: 'enabled', name: w.name, url: w.url, events: w.events, created_at: formatIso(w.createdAt) };
  if (w.createdBy !== null) out.created_by = w.createdBy;
  if (w.modifiedBy !== null) out.modified_by = w.modifiedBy;
  if (w.modifiedAt !== null) out.modified_at = formatIso(w.modifiedAt);
  return out;
}

export function deliveryView(d: WebhookDeliveryRecord): DeliveryView {
  const out: DeliveryView = {
    id: d.id,
    event_type: d.eventType,
    status: d.status,
    attempts: d.attempts,
    created_at: formatIso(d.createdAt),
    history: d.history.map((a) => ({ at: formatIso(a.at), status: a.status, error: a.error, duration_ms: a.durationMs })),
  };
  if (d.webhookId !== null) out.webhook_id = d.webhookId;
  if (d.requestId !== null) out.request_id = d.requestId;
  if (d.nextAttemptAt !== null && d.status === 'pending') out.next_attempt_at = formatIso(d.nextAttemptAt);
  if (d.completedAt !== null) out.completed_at = formatIso(d.completedAt);
  return out;
}
