import type { EventType } from '../../src/webhooks/webhook-events.js';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { WebhookVerificationError } from 'standardwebhooks';
import { describeEachStore } from '../support/stores.js';
import type { TestVault } from '../../src/testing/index.js';
import { MAX_ATTEMPTS, JITTER, nominalDelayMs } from '../../src/webhooks/retry-schedule.js';
import { startReceiver, verify, type Receiver } from './receiver.js';

const VISA = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '987' };
const HOUR = 3_600_000;

describeEachStore('webhook delivery', (store) => {
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  async function setup(events: EventType[] = ['token.created']) {
    const vault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const admin = await vault.authenticate(vault.adminKey);
    const hook = await vault.webhooks.create(admin, { name: 'receiver', url: receiver.url, events });
    const app = await vault.caller({ permissions: ['token:create', 'token:read', 'token:update', 'token:delete'] });
    return { vault, admin, hook, app };
  }

  const deliveriesOf = async (vault: TestVault, admin: Awaited<ReturnType<TestVault['authenticate']>>, hookId: string) =>
    (await vault.webhooks.deliveries(admin, hookId, { size: 100 })).data;

  it('POSTs a signed event that the standardwebhooks verifier accepts, once 2xx', async () => {
    const { vault, admin, hook, app } = await setup();
    const token = await vault.tokens.create(app, { type: 'card', data: VISA, metadata: { customer: 'cus_secret_42' } });
    expect(await vault.worker.runDue()).toBe(1);
    expect(receiver.received).toHaveLength(1);
    const { secret } = await vault.webhooks.secret(admin);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const payload = verify(receiver.received[0]!, secret, vault.clock);
    expect(payload).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'token.created',
      timestamp: '2030-01-01T00:00:00.000+00:00',
      data: { token_id: token.id, token_type: 'card', actor: app.applicationId },
    });
    const [delivery] = await deliveriesOf(vault, admin, hook.id);
    expect(receiver.received[0]!.headers['webhook-id']).toBe(delivery!.id);
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 1, event_type: 'token.created', history: [{ status: 204, error: null }] });
    // Nothing more to do, and a wrong secret does not verify.
    expect(await vault.worker.runDue()).toBe(0);
    expect(() => verify(receiver.received[0]!, `whsec_${Buffer.alloc(32, 1).toString('base64')}`, vault.clock)).toThrow(WebhookVerificationError);
  });

  it('after a rotation signs with the new and the previous secret for 24 hours, then the new one only', async () => {
    const { vault, admin, app } = await setup();
    const { secret: old } = await vault.webhooks.secret(admin);
    const { secret: fresh } = await vault.webhooks.rotateSecret(admin);
    expect(fresh).not.toBe(old);
    expect((await vault.webhooks.secret(admin)).secret).toBe(fresh);
    await vault.tokens.create(app, { type: 'token', data: 'x' });
    await vault.worker.runDue();
    const first = receiver.received[0]!;
    expect(first.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verify(first, old, vault.clock).type).toBe('token.created');
    expect(verify(first, fresh, vault.clock).type).toBe('token.created');
    vault.clock.advance(24 * HOUR);
    await vault.tokens.create(app, { type: 'token', data: 'y' });
    await vault.worker.runDue();
    const second = receiver.received[1]!;
    expect(second.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verify(second, fresh, vault.clock).type).toBe('token.created');
    expect(() => verify(second, old, vault.clock)).toThrow(WebhookVerificationError);
  });

  it('a receiver failing 3 times gets attempt 4 on the backoff schedule, with the same webhook-id', async () => {
    const { vault, admin, hook, app } = await setup();
    receiver.fail(3);
    await vault.tokens.create(app, { type: 'token', data: 'x' });
    for (let attempt = 1; attempt <= 3; attempt++) {
      expect(await vault.worker.runDue()).toBe(1);
      const [delivery] = await deliveriesOf(vault, admin, hook.id);
      expect(delivery).toMatchObject({ status: 'pending', attempts: attempt });
      const wait = Date.parse(delivery!.next_attempt_at!) - vault.clock.now();
      expect(wait).toBeGreaterThanOrEqual(nominalDelayMs(attempt) * (1 - JITTER));
      expect(wait).toBeLessThanOrEqual(nominalDelayMs(attempt) * (1 + JITTER));
      // Not before its time.
      vault.clock.advance(wait - 1);
      expect(await vault.worker.runDue()).toBe(0);
      vault.clock.advance(1);
    }
    expect(await vault.worker.runDue()).toBe(1);
    expect(receiver.received.map((r) => r.status)).toEqual([500, 500, 500, 204]);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const [delivery] = await deliveriesOf(vault, admin, hook.id);
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 4 });
    expect(delivery!.history.map((a) => a.status)).toEqual([500, 500, 500, 204]);
    expect(delivery!.history[0]!.error).toBe('the receiver answered 500');
  });

  it('fails after the last attempt (about 2.5 hours) with an audit entry, and a retry by hand delivers it', async () => {
    const { vault, admin, hook, app } = await setup();
    receiver.fail(MAX_ATTEMPTS, 503);
    await vault.tokens.create(app, { type: 'token', data: 'x' });
    const start = vault.clock.now();
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      expect(await vault.worker.runDue()).toBe(1);
      const [delivery] = await deliveriesOf(vault, admin, hook.id);
      if (delivery!.next_attempt_at) vault.clock.advance(Date.parse(delivery!.next_attempt_at) - vault.clock.now());
    }
    const elapsed = vault.clock.now() - start;
    expect(elapsed).toBeGreaterThan(1.8 * HOUR);
    expect(elapsed).toBeLessThan(3 * HOUR);
    const [failed] = await deliveriesOf(vault, admin, hook.id);
    expect(failed).toMatchObject({ status: 'failed', attempts: MAX_ATTEMPTS });
    expect(failed!.next_attempt_at).toBeUndefined();
    vault.clock.advance(10 * HOUR);
    expect(await vault.worker.runDue()).toBe(0);
    const audit = await vault.logs.list(await vault.caller({ permissions: ['log:read'] }), { resource_id: failed!.id });
    expect(audit.data).toEqual([expect.objectContaining({ actor: 'system:webhooks', operation: 'webhook:deliver', outcome: 'failure', detail: 'delivery_failed' })]);
    // By hand: a new round, delivered now.
    const retried = await vault.webhooks.retryDelivery(admin, failed!.id);
    expect(retried).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await vault.worker.runDue()).toBe(1);
    expect(await vault.webhooks.getDelivery(admin, failed!.id)).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(receiver.received).toHaveLength(MAX_ATTEMPTS + 1);
    // Only a failed delivery can be retried.
    await expect(vault.webhooks.retryDelivery(admin, failed!.id)).rejects.toMatchObject({ code: 'conflict' });
  });

  it('a connection error or a redirect is a failed attempt, retried', async () => {
    const { vault, admin, hook, app } = await setup();
    await receiver.close();
    await vault.tokens.create(app, { type: 'token', data: 'x' });
    await vault.worker.runDue();
    const [delivery] = await deliveriesOf(vault, admin, hook.id);
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1, history: [{ status: null, error: expect.stringContaining('failed') }] });
    receiver = await startReceiver();
    receiver.fail(1, 302);
    await vault.webhooks.update(admin, hook.id, { name: 'moved', url: receiver.url, events: ['token.created'] });
    vault.clock.advance(nominalDelayMs(1) * 2);
    await vault.worker.runDue();
    expect((await vault.webhooks.getDelivery(admin, delivery!.id)).history[1]).toMatchObject({ status: 302, error: 'the receiver answered 302' });
  });

  it('the sweep removes deliveries 7 days after they finished, not before', async () => {
    const { vault, admin, hook, app } = await setup();
    await vault.tokens.create(app, { type: 'token', data: 'x' });
    await vault.worker.runDue();
    const [delivery] = await deliveriesOf(vault, admin, hook.id);
    vault.clock.advance(7 * 24 * HOUR - 1);
    await vault.sweep();
    expect(await deliveriesOf(vault, admin, hook.id)).toHaveLength(1);
    vault.clock.advance(1);
    await vault.sweep();
    expect(await deliveriesOf(vault, admin, hook.id)).toEqual([]);
    await expect(vault.webhooks.getDelivery(admin, delivery!.id)).rejects.toMatchObject({ code: 'not_found' });
  });
});
