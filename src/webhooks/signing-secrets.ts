import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Clock } from '../common/clock.js';
import type { KeyRing } from '../crypto/key-ring.js';
import type { Store, WebhookSecretRecord } from '../storage/store.js';

/** How long the secret before a rotation keeps signing beside the new one. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 60 * 60 * 1000;
const CONTEXT = ['webhook-secret'] as const;

interface SecretState {
  current: string;
  previous: string | null;
  previousUntil: number | null;
}

/** A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes. */
export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The three Standard Webhooks headers of one attempt. */
export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The per-tenant signing secrets: made on first need, stored sealed with the tenant's data key
 * (KeyRing.sealRecord, so the database alone does not reveal them), rotated by compare-and-set.
 * After a rotation the previous secret also signs for 24 hours, so receivers can switch at leisure.
 */
export class SigningSecrets {
  #store: Store;
  #keys: KeyRing;
  #clock: Clock;

  constructor(deps: { store: Store; keys: KeyRing; clock: Clock }) {
    this.#store = deps.store;
    this.#keys = deps.keys;
    this.#clock = deps.clock;
  }

  /** The tenant's current secret and when it was set, creating it on first need. */
  async current(tenantId: string): Promise<{ secret: string; updatedAt: number }> {
    const { state, record } = await this.#load(tenantId);
    return { secret: state.current, updatedAt: record.updatedAt };
  }

  /** Makes a new secret; the old one keeps signing (beside it) for 24 hours. Returns the new one. */
  async rotate(tenantId: string): Promise<{ secret: string; updatedAt: number }> {
    for (;;) {
      const { state, record } = await this.#load(tenantId);
      const now = this.#clock.now();
      const next: SecretState = { current: generateSecret(), previous: state.current, previousUntil: now + PREVIOUS_SECRET_GRACE_MS };
      const sealed = await this.#seal(tenantId, next);
      if (await this.#store.putWebhookSecret({ tenantId, sealed, version: record.version + 1, updatedAt: now }, record.version)) {
        return { secret: next.current, updatedAt: now };
      }
      // Another rotation won: rotate from what it wrote.
    }
  }

  /** Signs one attempt with every valid secret (`v1,<sig>` separated by spaces), stamped with the vault clock. */
  async sign(tenantId: string, messageId: string, body: string): Promise<SignedHeaders> {
    const { state } = await this.#load(tenantId);
    const now = this.#clock.now();
    const secrets = [state.current];
    if (state.previous !== null && state.previousUntil !== null && now < state.previousUntil) secrets.push(state.previous);
    const timestamp = new Date(Math.floor(now / 1000) * 1000);
    return {
      'webhook-id': messageId,
      'webhook-timestamp': String(Math.floor(now / 1000)),
      'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(messageId, timestamp, body)).join(' '),
    };
  }

  async #load(tenantId: string): Promise<{ state: SecretState; record: WebhookSecretRecord }> {
    for (;;) {
      const record = await this.#store.getWebhookSecret(tenantId);
      if (record !== null) {
        const state = JSON.parse((await this.#keys.openRecord(tenantId, CONTEXT, record.sealed)).toString('utf8')) as SecretState;
        return { state, record };
      }
      const state: SecretState = { current: generateSecret(), previous: null, previousUntil: null };
      // Racing creators: one insert wins and everyone reads it back.
      await this.#store.putWebhookSecret({ tenantId, sealed: await this.#seal(tenantId, state), version: 1, updatedAt: this.#clock.now() }, null);
    }
  }

  #seal(tenantId: string, state: SecretState): Promise<Buffer> {
    return this.#keys.sealRecord(tenantId, CONTEXT, Buffer.from(JSON.stringify(state), 'utf8'));
  }
}
