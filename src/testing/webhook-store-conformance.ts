import { describe, expect, it } from 'vitest';
import type { Store } from '../storage/store.js';
import type { WebhookDeliveryRecord, WebhookRecord } from '../storage/webhook-records.js';

/*
 * The webhook part of the Store conformance suite (webhook-records.ts states each guarantee). Run
 * by runStoreConformance inside its describe, so tenants A and B exist.
 */

const TENANT_A = '0a0a0a0a-0000-4000-8000-00000000000a';
const TENANT_B = '0b0b0b0b-0000-4000-8000-00000000000b';
const T0 = Date.UTC(2030, 0, 1);
let counter = 0;

function makeWebhook(overrides: Partial<WebhookRecord> = {}): WebhookRecord {
  return {
    tenantId: TENANT_A,
    id: `wh-${++counter}`,
    name: 'orders',
    url: 'https://hooks.example.com/in',
    events: ['token.created'],
    createdBy: 'app',
    createdAt: T0,
    modifiedBy: null,
    modifiedAt: null,
    ...overrides,
  };
}

function makeDelivery(overrides: Partial<WebhookDeliveryRecord> = {}): WebhookDeliveryRecord {
  return {
    tenantId: TENANT_A,
    id: `msg_${++counter}`,
    webhookId: 'wh',
    requestId: null,
    eventType: 'token.created',
    url: null,
    payload: new Uint8Array([1, 2, 3]),
    status: 'pending',
    attempts: 0,
    history: [],
    nextAttemptAt: T0,
    createdAt: T0,
    completedAt: null,
    ...overrides,
  };
}

const cursor = (size: number) => ({ mode: 'cursor' as const, size });

/** Registers the webhook store tests; `store()` is the store of the current test. */
export function describeWebhookStore(store: () => Store): void {
  describe('webhooks', () => {
    it('create, get, list, update and delete are scoped by tenant', async () => {
      const a = makeWebhook();
      const b = makeWebhook({ tenantId: TENANT_B });
      await store().createWebhook(a);
      await store().createWebhook(b);
      expect(await store().createWebhook(a)).toBe('exists');
      expect(await store().getWebhook(TENANT_A, a.id)).toEqual(a);
      expect(await store().getWebhook(TENANT_B, a.id)).toBeNull();
      const page = await store().listWebhooks(TENANT_A, cursor(10));
      expect(page.items.map((w) => w.id)).toEqual([a.id]);
      expect((await store().listAllWebhooks(TENANT_B, 10)).map((w) => w.id)).toEqual([b.id]);
      const next = { ...a, name: 'renamed', url: 'https://other.example.com/', events: ['token.deleted', 'token.updated'], modifiedBy: 'x', modifiedAt: T0 + 1 };
      expect(await store().updateWebhook(next)).toBe(true);
      expect(await store().getWebhook(TENANT_A, a.id)).toEqual(next);
      expect(await store().updateWebhook({ ...next, tenantId: TENANT_B })).toBe(false);
      expect(await store().deleteWebhook(TENANT_B, a.id)).toBe(false);
      expect(await store().deleteWebhook(TENANT_A, a.id)).toBe(true);
      expect(await store().getWebhook(TENANT_A, a.id)).toBeNull();
    });

    it('the secret is compare-and-set: one insert wins, a stale version changes nothing', async () => {
      const record = { tenantId: TENANT_A, sealed: new Uint8Array([9]), version: 1, updatedAt: T0 };
      const inserts = await Promise.all([1, 2, 3].map(() => Promise.resolve().then(() => store().putWebhookSecret(record, null))));
      expect(inserts.filter(Boolean)).toHaveLength(1);
      expect(await store().getWebhookSecret(TENANT_B)).toBeNull();
      const rotated = { ...record, sealed: new Uint8Array([10]), version: 2, updatedAt: T0 + 1 };
      const rotations = await Promise.all([1, 2].map(() => Promise.resolve().then(() => store().putWebhookSecret(rotated, 1))));
      expect(rotations.filter(Boolean)).toHaveLength(1);
      const stored = await store().getWebhookSecret(TENANT_A);
      expect({ ...stored, sealed: [...stored!.sealed] }).toEqual({ ...rotated, sealed: [10] });
    });

    it('deliveries: create, get, list by webhook and request, tenant-scoped', async () => {
      const d = makeDelivery();
      const callback = makeDelivery({ webhookId: null, requestId: 'req-1', url: 'https://cb.example.com/', eventType: 'reactor.completed' });
      await store().createWebhookDelivery(d);
      await store().createWebhookDelivery(callback);
      expect(await store().createWebhookDelivery(d)).toBe('exists');
      const got = await store().getWebhookDelivery(TENANT_A, d.id);
      expect({ ...got, payload: [...got!.payload] }).toEqual({ ...d, payload: [1, 2, 3] });
      expect(await store().getWebhookDelivery(TENANT_B, d.id)).toBeNull();
      expect((await store().listWebhookDeliveries(TENANT_A, { webhookId: 'wh' }, cursor(10))).items.map((x) => x.id)).toEqual([d.id]);
      expect((await store().listWebhookDeliveries(TENANT_A, { requestId: 'req-1' }, cursor(10))).items.map((x) => x.id)).toEqual([callback.id]);
      expect((await store().listWebhookDeliveries(TENANT_B, {}, cursor(10))).items).toEqual([]);
    });

    it('recordWebhookAttempt counts each attempt once, even when two workers race', async () => {
      const d = makeDelivery();
      await store().createWebhookDelivery(d);
      const attempt = { at: T0, status: 500, error: 'answered 500', durationMs: 3 };
      const pending = { status: 'pending' as const, nextAttemptAt: T0 + 5000, completedAt: null };
      const results = await Promise.all([1, 2, 3].map(() => Promise.resolve().then(() => store().recordWebhookAttempt(TENANT_A, d.id, 0, attempt, pending))));
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await store().recordWebhookAttempt(TENANT_B, d.id, 1, attempt, pending)).toBe(false);
      const failed = { status: 'failed' as const, nextAttemptAt: null, completedAt: T0 + 9 };
      expect(await store().recordWebhookAttempt(TENANT_A, d.id, 1, { ...attempt, at: T0 + 9 }, failed)).toBe(true);
      const after = await store().getWebhookDelivery(TENANT_A, d.id);
      expect(after).toMatchObject({ status: 'failed', attempts: 2, nextAttemptAt: null, completedAt: T0 + 9 });
      expect(after!.history).toEqual([attempt, { ...attempt, at: T0 + 9 }]);
      // Finished: no more attempts recorded.
      expect(await store().recordWebhookAttempt(TENANT_A, d.id, 2, attempt, pending)).toBe(false);
      // A failed delivery restarts once for a new round; the history stays.
      expect(await store().restartWebhookDelivery(TENANT_B, d.id, T0 + 10)).toBe(false);
      expect(await store().restartWebhookDelivery(TENANT_A, d.id, T0 + 10)).toBe(true);
      expect(await store().restartWebhookDelivery(TENANT_A, d.id, T0 + 10)).toBe(false);
      expect(await store().getWebhookDelivery(TENANT_A, d.id)).toMatchObject({ status: 'pending', attempts: 0, nextAttemptAt: T0 + 10, completedAt: null });
      expect((await store().getWebhookDelivery(TENANT_A, d.id))!.history).toHaveLength(2);
    });

    it('the history keeps the last 50 attempts', async () => {
      const d = makeDelivery();
      await store().createWebhookDelivery(d);
      for (let i = 0; i < 52; i++) {
        const ok = await store().recordWebhookAttempt(
          TENANT_A,
          d.id,
          i,
          { at: T0 + i, status: null, error: 'refused', durationMs: 0 },
          { status: 'pending', nextAttemptAt: T0, completedAt: null },
        );
        expect(ok).toBe(true);
      }
      const history = (await store().getWebhookDelivery(TENANT_A, d.id))!.history;
      expect(history).toHaveLength(50);
      expect(history[0]!.at).toBe(T0 + 2);
      expect(history.at(-1)!.at).toBe(T0 + 51);
    });

    it('purgeWebhookDeliveries removes completed deliveries up to a time, any tenant, at most `limit`', async () => {
      const old = makeDelivery({ status: 'succeeded', completedAt: T0 });
      const oldB = makeDelivery({ tenantId: TENANT_B, status: 'failed', completedAt: T0 + 1 });
      const recent = makeDelivery({ status: 'succeeded', completedAt: T0 + 100 });
      const pending = makeDelivery();
      for (const d of [old, oldB, recent, pending]) await store().createWebhookDelivery(d);
      expect(await store().purgeWebhookDeliveries(T0 + 50, 1)).toBe(1);
      expect(await store().purgeWebhookDeliveries(T0 + 50, 10)).toBe(1);
      expect(await store().getWebhookDelivery(TENANT_A, old.id)).toBeNull();
      expect(await store().getWebhookDelivery(TENANT_B, oldB.id)).toBeNull();
      expect(await store().getWebhookDelivery(TENANT_A, recent.id)).not.toBeNull();
      expect(await store().getWebhookDelivery(TENANT_A, pending.id)).not.toBeNull();
    });
  });
}
