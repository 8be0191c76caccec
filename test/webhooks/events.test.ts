import { afterEach, beforeEach, expect, it } from 'vitest';
import { describeEachStore } from '../support/stores.js';
import { heldStoreMethod } from '../support/held-store-method.js';
import { createTestVault } from '../../src/testing/index.js';
import { EVENT_TYPES } from '../../src/webhooks/webhook-events.js';
import { startReceiver, verify, type Receiver } from './receiver.js';

const VISA = { number: '4111111111111111', expiration_month: 12, expiration_year: 2031, cvc: '735' };
const SECRET_META = 'meta-value-do-not-leak';

describeEachStore('webhook events', (store) => {
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  it('token and application events fire after each change and carry ids, types and times only', async () => {
    const vault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const admin = await vault.authenticate(vault.adminKey);
    const events = EVENT_TYPES.filter((t) => !t.startsWith('reactor.'));
    await vault.webhooks.create(admin, { name: 'all', url: receiver.url, events: [...events] });
    const permissions = ['token:create', 'token:read', 'token:update', 'token:delete'] as const;
    // Reveals its own tokens, so its second deduplicating create finds the first.
    const app = await vault.caller({ permissions: [...permissions], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: [...permissions] }] });
    const card = await vault.tokens.create(app, { type: 'card', data: VISA, metadata: { note: SECRET_META } });
    await vault.tokens.update(app, card.id, { metadata: { note: `${SECRET_META}-2` } });
    await vault.tokens.delete(app, card.id);
    const expiring = await vault.tokens.create(app, { type: 'card', data: { ...VISA, number: '5555555555554444' }, expires_at: '2030-01-02T00:00:00Z' });
    // A deduplicated create is no creation: no event.
    const deduped = { type: 'token', data: 'same', deduplicate_token: true };
    await vault.tokens.create(app, deduped);
    await vault.tokens.create(app, deduped);
    vault.clock.advance(2 * 24 * 3_600_000);
    await vault.sweep();
    const other = await vault.applications.create(admin, { name: 'other', type: 'private', permissions: ['token:read'] });
    await vault.applications.update(admin, other.id, { name: 'renamed', permissions: ['token:read'] });
    const key = await vault.applicationKeys.create(admin, other.id);
    await vault.applicationKeys.delete(admin, other.id, key.id);
    await vault.applications.delete(admin, other.id);
    await vault.worker.runDue();
    const { secret } = await vault.webhooks.secret(admin);
    const payloads = receiver.received.map((r) => verify(r, secret, vault.clock));
    // Deliveries run concurrently (the worker's concurrency): compare as a set.
    const seen = payloads.map((p) => [p.type, p.data.token_id ?? p.data.application_id]);
    expect(seen).toHaveLength(12);
    expect(seen).toEqual(
      expect.arrayContaining([
        ['application.created', app.applicationId],
        ['token.created', card.id],
        ['token.updated', card.id],
        ['token.deleted', card.id],
        ['token.created', expiring.id],
        ['token.created', expect.any(String)],
        ['token.expired', expiring.id],
        ['application.created', other.id],
        ['application.updated', other.id],
        ['application.key_created', other.id],
        ['application.key_deleted', other.id],
        ['application.deleted', other.id],
      ]),
    );
    // A key event names the key and who made it, never the key itself.
    expect(payloads.find((p) => p.type === 'application.key_created').data).toEqual({ application_id: other.id, key_id: key.id, actor: admin.applicationId });
    expect(payloads.find((p) => p.type === 'token.expired').data).toEqual({
      token_id: expiring.id,
      token_type: 'card',
      expired_at: '2030-01-02T00:00:00.000+00:00',
      actor: 'system:expiry',
    });
    for (const p of payloads) {
      expect(Object.keys(p).sort()).toEqual(['data', 'id', 'timestamp', 'type']);
      for (const value of Object.values(p.data)) expect(typeof value).toBe('string');
    }
    // No data, no metadata values, in any body.
    // Ids and times are scrubbed first: a 3-digit cvc could appear inside a random UUID by chance.
    const bodies = receiver.received
      .map((r) => r.body)
      .join('\n')
      .replace(/evt_[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d{4}-\d{2}-\d{2}T[\d:.]+\+00:00/g, '');
    for (const secretValue of [VISA.number, '5555555555554444', VISA.cvc, SECRET_META, 'same']) expect(bodies).not.toContain(secretValue);
  });

  it('only subscribed events are delivered, and a tenant without webhooks records no delivery', async () => {
    const vault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const admin = await vault.authenticate(vault.adminKey);
    const app = await vault.caller({ permissions: ['token:create', 'token:delete'] });
    const before = await vault.tokens.create(app, { type: 'token', data: 'a' });
    expect((await vault.webhooks.listDeliveries(admin)).data).toEqual([]);
    const hook = await vault.webhooks.create(admin, { name: 'deletes', url: receiver.url, events: ['token.deleted'] });
    await vault.tokens.create(app, { type: 'token', data: 'b' });
    await vault.tokens.delete(app, before.id);
    await vault.worker.runDue();
    expect(receiver.received.map((r) => JSON.parse(r.body).type)).toEqual(['token.deleted']);
    // Deleted: later events are not delivered.
    await vault.webhooks.delete(admin, hook.id);
    await vault.tokens.delete(app, (await vault.tokens.create(app, { type: 'token', data: 'c' })).id);
    await vault.worker.runDue();
    expect(receiver.received).toHaveLength(1);
  });

  it('the events of concurrent changes share one read of the subscriptions; a read begun before a webhook change is not kept', async () => {
    const inner = store.create();
    const reads = heldStoreMethod(inner, 'listAllWebhooks');
    const vault = await createTestVault({ store: reads.store, reactors: { egress: { allowPrivateNetwork: true } } });
    try {
      const admin = await vault.authenticate(vault.adminKey);
      const app = await vault.caller({ permissions: ['token:create'] });
      // Past the subscriptions' cache time: the first event of the tenant reads them.
      vault.clock.advance(60_000);
      reads.reset();
      await Promise.all(['a', 'b', 'c', 'd'].map((data) => vault.tokens.create(app, { type: 'token', data })));
      expect(reads.answered).toBe(1);
      // A read under way when a webhook is created: it answers its event, but the next event reads afresh.
      vault.clock.advance(60_000);
      reads.holdNext();
      const during = vault.tokens.create(app, { type: 'token', data: 'e' });
      await reads.answeredAtLeast(2);
      await vault.webhooks.create(admin, { name: 'created', url: receiver.url, events: ['token.created'] });
      reads.release();
      await during;
      await vault.tokens.create(app, { type: 'token', data: 'f' });
      const deliveries = (await vault.webhooks.listDeliveries(admin)).data;
      expect(deliveries).toHaveLength(1);
    } finally {
      await vault.close();
      await store.cleanup(inner);
    }
  });
});
