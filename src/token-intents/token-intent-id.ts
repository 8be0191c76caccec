import { randomUUID } from 'node:crypto';

/**
 * Token intents have their own id namespace (docs/token-intents.md, "Ids"): every intent id is
 * `intent_` followed by a random UUID, and no token may take an id that starts with `intent_` (in
 * any letter case). An id in `{{ <id> }}` is therefore looked up in exactly one place, by its form:
 * without this, a caller with token:create that learnt an intent id could create a token with that
 * id and have every `{{ <intent id> }}` resolve to its own data instead of the intent's.
 */
export const TOKEN_INTENT_ID_PREFIX = 'intent_';

/** The rule a chosen token id breaks when it takes the intents' namespace (the 400's words). */
export const RESERVED_ID_RULE = `must not start with '${TOKEN_INTENT_ID_PREFIX}': ids of that form name token intents`;

/** A fresh intent id. */
export function newTokenIntentId(): string {
  return TOKEN_INTENT_ID_PREFIX + randomUUID();
}

/** Whether `id` is of the form of an intent id (where it is looked up: intents, never tokens). */
export function isTokenIntentId(id: string): boolean {
  return id.startsWith(TOKEN_INTENT_ID_PREFIX);
}

/** Whether a token may not take `id`: it starts with the intent prefix in any letter case. */
export function isReservedForIntents(id: string): boolean {
  return id.slice(0, TOKEN_INTENT_ID_PREFIX.length).toLowerCase() === TOKEN_INTENT_ID_PREFIX;
}
