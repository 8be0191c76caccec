import { afterEach, beforeEach, expect, it } from 'vitest';
import { describeEachStore } from '../support/stores.js';
import { startReceiver, verify, type Receiver } from './receiver.js';

const REQUEST = '0190a0a0-0000-7000-8000-0000000000aa';
const REACTOR = '0190a0a0-0000-7000-8000-0000000000bb';
const RESULT_SECRET = 'charge-receipt-4242424242424242';

describeEachStore('async reactor callbacks', (store) => {
  let receiver: Receiver;
  let events: Receiver;
  beforeEach(async () => {
    receiver = await startReceiver();
    events = await startReceiver();
  });
  afterEach(async () => {
    await receiver.close();
    await events.close();
  });

  it('a finished run POSTs a signed reactor.completed callback with the result, and the event webhook gets ids only', async () => {
    const vault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const admin = await vault.authenticate(vault.adminKey);
    await vault.webhooks.create(admin, { name: 'runs', url: events.url, events: ['reactor.completed', 'reactor.failed'] });
    const base = { tenantId: vault.tenantId, reactorId: REACTOR, applicationId: 'app-1', completedAt: vault.clock.now() };
    await vault.runFinished({ ...base, requestId: REQUEST, status: 'completed', callbackUrl: receiver.url, result: { raw: { receipt: RESULT_SECRET }, tokens: {} } });
    await vault.runFinished({
      ...base,
      requestId: `${REQUEST}-2`,
      status: 'failed',
      callbackUrl: receiver.url,
      error: { status: 500, title: 'ReactorRuntimeError', detail: 'boom' },
    });
    // The sealed body is not in the table in clear.
    const rows = await vault.store.listWebhookDeliveries(vault.tenantId, { requestId: REQUEST }, { mode: 'cursor', size: 10 });
    expect(rows.items).toHaveLength(1);
    expect(Buffer.from(rows.items[0]!.payload).toString('latin1')).not.toContain(RESULT_SECRET);
    await vault.worker.runDue();
    const { secret } = await vault.webhooks.secret(admin);
    const [completed, failed] = receiver.received.map((r) => verify(r, secret, vault.clock)).sort((a, b) => a.type.localeCompare(b.type));
    expect(completed).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'reactor.completed',
      timestamp: '2030-01-01T00:00:00.000+00:00',
      data: { request_id: REQUEST, reactor_id: REACTOR, status: 'completed', result: { raw: { receipt: RESULT_SECRET }, tokens: {} } },
    });
    expect(failed).toMatchObject({ type: 'reactor.failed', data: { request_id: `${REQUEST}-2`, status: 'failed', error: { status: 500, title: 'ReactorRuntimeError' } } });
    const eventPayloads = events.received.map((r) => verify(r, secret, vault.clock)).sort((a, b) => a.type.localeCompare(b.type));
    expect(eventPayloads.map((p) => [p.type, p.data])).toEqual([
      ['reactor.completed', { request_id: REQUEST, reactor_id: REACTOR, status: 'completed', application_id: 'app-1' }],
      ['reactor.failed', { request_id: `${REQUEST}-2`, reactor_id: REACTOR, status: 'failed', application_id: 'app-1' }],
    ]);
    expect(events.received.map((r) => r.body).join()).not.toContain(RESULT_SECRET);
    // Queryable by request id (status and attempts, never the body).
    const listed = await vault.webhooks.listDeliveries(admin, { request_id: REQUEST });
    expect(listed.data).toEqual([expect.objectContaining({ request_id: REQUEST, event_type: 'reactor.completed', status: 'succeeded', attempts: 1 })]);
    expect(JSON.stringify(listed)).not.toContain(RESULT_SECRET);
  });
});
