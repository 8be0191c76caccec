import type { StoredAuditEntry } from '../storage/store.js';
import { formatIso } from '../common/time.js';

/**
 * Basis Theory's names for an audit entry, derived from ours (docs/basis-theory.md): the entity is
 * what the operation's prefix names (`token:read` → `token`), its id the entry's resource id; the
 * actor is an application (or a session) unless it is one of the vault's own `system:` actors.
 */
export interface BtLogFields {
  entity_type: string;
  entity_id: string | null;
  actor_id: string;
  actor_type: 'application' | 'system';
  message: string;
  created_at: string;
}

/** Entity types an entry may name (GET /logs/entity-types), by the operation prefix that makes them. */
export const LOG_ENTITY_TYPES: readonly { display_name: string; value: string }[] = Object.freeze([
  { display_name: 'Application', value: 'application' },
  { display_name: 'Proxy', value: 'proxy' },
  { display_name: 'Reactor', value: 'reactor' },
  { display_name: 'Reactor Formula', value: 'formula' },
  { display_name: 'Session', value: 'session' },
  { display_name: 'Token', value: 'token' },
  { display_name: 'Token Intent', value: 'token-intent' },
  { display_name: 'Webhook', value: 'webhook' },
]);

/** `token:read` → `token`; a webhook's signing secret is the webhook's. */
export function entityTypeOf(operation: string): string {
  const colon = operation.indexOf(':');
  const prefix = colon < 0 ? operation : operation.slice(0, colon);
  return prefix === 'webhook-secret' ? 'webhook' : prefix;
}

export function btLogFields(entry: StoredAuditEntry): BtLogFields {
  const verb = entry.operation.slice(entry.operation.indexOf(':') + 1);
  const subject = entry.resourceId === null ? entityTypeOf(entry.operation) : `${entityTypeOf(entry.operation)} ${entry.resourceId}`;
  // Our words, ids and error codes only: an entry never holds data, so neither does its message.
  const message = entry.outcome === 'success' ? `${verb} of ${subject} succeeded` : `${verb} of ${subject} failed (${entry.detail ?? 'error'})`;
  return {
    entity_type: entityTypeOf(entry.operation),
    entity_id: entry.resourceId,
    actor_id: entry.actor,
    actor_type: entry.actor.startsWith('system:') ? 'system' : 'application',
    message,
    created_at: formatIso(entry.at),
  };
}
