/** End to end: an asynchronous reactor run, its job, the callback delivery and event webhooks, with a real receiver, on both stores. */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { createFetchHandler } from '../../src/http/index.js';
import { createPostgresStore } from '../../src/postgres.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { PG_URL, adminPool, dropSchema, freshSchema } from '../support/postgres.js';
import { describeEachStore } from '../support/stores.js';
import { startReceiver, verify, type Receiver } from './receiver.js';
import { SUITE_START } from '../support/suite-start.js';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' };
const ECHO_LAST4 = 'module.exports = async function (req) { return { raw: { last4: String(req.args.card.number).slice(-4), n: req.args.n } }; }';
const THROWS = "module.exports = async function () { throw new Error('declined'); }";
const PRIVATE_NETWORK = { reactors: { egress: { allowPrivateNetwork: true } } };

async function setup(vault: TestVault, code: string) {
  const admin = await vault.authenticate(vault.adminKey);
  const user = await vault.caller({ name: 'user', permissions: ['token:create', 'token:read', 'token:use'] });
  const formula = await vault.formulas.create(admin, { name: 'f', code });
  const reactor = await vault.reactors.create(admin, { name: 'r', formula: { id: formula.id }, configuration: {} });
  const card = await vault.tokens.create(user, { type: 'card', data: CARD });
  return { admin, user, reactorId: reactor.id, card };
}

describeEachStore('asynchronous runs announced by webhook', (store) => {
  let callbacks: Receiver;
  let events: Receiver;
  beforeEach(async () => {
    callbacks = await startReceiver();
    events = await startReceiver();
  });
  afterEach(async () => {
    await callbacks.close();
    await events.close();
  });

  it('a run asked for over HTTP with callback_url is delivered signed as reactor.completed; the event webhook gets ids only', async () => {
    const vault = await store.vault(PRIVATE_NETWORK);
    const { admin, user, reactorId, card } = await setup(vault, ECHO_LAST4);
    await vault.webhooks.create(admin, { name: 'runs', url: events.url, events: ['reactor.completed', 'reactor.failed'] });
    const handler = createFetchHandler(vault);
    const response = await handler(
      new Request(`http://vault.test/reactors/${reactorId}/react`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'SVC-API-KEY': (user as { key: string }).key },
        body: JSON.stringify({ args: { card: `{{ ${card.id} }}`, n: 1 }, callback_url: callbacks.url }),
      }),
    );
    expect(response.status).toBe(202);
    const accepted = (await response.json()) as { id: string; status: string };
    expect(accepted.status).toBe('pending');
    expect(callbacks.received).toHaveLength(0);

    await vault.worker.runDue();
    const { secret } = await vault.webhooks.secret(admin);
    expect(callbacks.received).toHaveLength(1);
    expect(verify(callbacks.received[0]!, secret, vault.clock)).toMatchObject({
      type: 'reactor.completed',
      data: { request_id: accepted.id, reactor_id: reactorId, status: 'completed', result: { raw: { last4: '4242', n: 1 } } },
    });
    expect(events.received.map((r) => verify(r, secret, vault.clock))).toEqual([
      expect.objectContaining({ type: 'reactor.completed', data: expect.objectContaining({ request_id: accepted.id, status: 'completed' }) }),
    ]);
    for (const secretValue of [CARD.number, JSON.stringify(CARD.cvc), '"last4"']) expect(events.received[0]!.body).not.toContain(secretValue);
  });

  it('a failing run is delivered as reactor.failed with its problem', async () => {
    const vault = await store.vault(PRIVATE_NETWORK);
    const { admin, user, reactorId } = await setup(vault, THROWS);
    const accepted = await vault.reactors.invoke(user, reactorId, { callback_url: callbacks.url });
    await vault.worker.runDue();
    const { secret } = await vault.webhooks.secret(admin);
    expect(verify(callbacks.received[0]!, secret, vault.clock)).toMatchObject({
      type: 'reactor.failed',
      data: { request_id: (accepted as { id: string }).id, status: 'failed', error: { detail: expect.stringMatching(/declined/) } },
    });
  });

  if (store.name === 'postgres') {
    it('two instances on one database: 200 runs, each delivered and run once', async () => {
      const masterKey = generateMasterKey();
      const schema = freshSchema('e2e');
      const open = () => createPostgresStore({ connectionString: PG_URL!, schema, max: 4 });
      const a = await createTestVault({ start: SUITE_START, store: open(), masterKey, ...PRIVATE_NETWORK });
      const b = await createTestVault({ start: SUITE_START, store: open(), masterKey, ...PRIVATE_NETWORK });
      try {
        const { admin, user, reactorId, card } = await setup(a, ECHO_LAST4);
        const ids = new Set<string>();
        for (let n = 0; n < 200; n++) {
          const accepted = await a.reactors.invoke(user, reactorId, { args: { card: `{{ ${card.id} }}`, n }, callback_url: callbacks.url });
          ids.add((accepted as { id: string }).id);
        }
        let ran = [0, 0];
        // Both workers claim concurrently until nothing is due (deliveries are enqueued by the runs).
        for (;;) {
          const round = await Promise.all([a.worker.runDue(), b.worker.runDue()]);
          if (round[0] + round[1] === 0) break;
          ran = [ran[0]! + round[0], ran[1]! + round[1]];
        }
        expect(ran[0]).toBeGreaterThan(0);
        expect(ran[1]).toBeGreaterThan(0);
        const { secret } = await a.webhooks.secret(admin);
        const delivered = callbacks.received.map((r) => verify(r, secret, a.clock) as { data: { request_id: string; status: string } });
        expect(delivered.every((p) => p.data.status === 'completed')).toBe(true);
        expect(new Set(delivered.map((p) => p.data.request_id))).toEqual(ids);
        expect(delivered).toHaveLength(200);
        await Promise.all([a.close(), b.close()]);
        const audit = await adminPool().query(`SELECT count(*)::int AS n FROM "${schema}".audit_log WHERE operation = 'reactor:invoke' AND outcome = 'success'`);
        expect(audit.rows[0].n).toBe(200);
      } finally {
        await Promise.all([a.close(), b.close()]).catch(() => undefined);
        await dropSchema(schema);
      }
    }, 120_000);
  }
});
