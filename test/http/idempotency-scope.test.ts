/**
 * Found by a red-team pass on idempotency keys: a public application's key is shared by every
 * browser, so it cannot hold idempotency keys; and a replay never hands out data the vault no
 * longer holds.
 */
import { beforeEach, expect, it } from 'vitest';
import { type Harness, VISA, expectProblem, harness } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

const KEY = 'SVC-IDEMPOTENCY-KEY';
const REVEAL = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update', 'token:use'] }];

describeEachStore('HTTP idempotency scope', (store) => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness({}, store);
  });

  it("a public application's key with an idempotency key is a 400 naming the header, and nothing runs (POST /sessions, POST /tokens)", async () => {
    const browserKey = await h.key(['token:create', 'token:update'], 'public');
    const backendKey = await h.key(['token:create', 'token:read', 'token:use'], 'private');
    const session = await h.call('POST', '/sessions', { key: browserKey, headers: { [KEY]: 'checkout-1' } });
    expect(expectProblem(session, 400).errors).toEqual({ [KEY]: [expect.stringContaining("public application's key")] });
    const token = await h.call('POST', '/tokens', { key: browserKey, body: { type: 'card', data: VISA }, headers: { [KEY]: 'order-77' } });
    expectProblem(token, 400);
    expect((await h.call('GET', '/tokens', { key: backendKey })).body.data).toEqual([]);
    // Without the header the public key works as before; a session (a caller of its own) may use keys.
    const created = await h.call('POST', '/sessions', { key: browserKey });
    expect(created.status).toBe(201);
    expect((await h.call('POST', '/sessions/authorize', { key: backendKey, body: { nonce: created.body.nonce, permissions: ['token:create'] } })).status).toBe(204);
    const viaSession = () => h.call('POST', '/tokens', { key: created.body.session_key, body: { type: 'token', data: 'x' }, headers: { [KEY]: 'order-78' } });
    const first = await viaSession();
    expect(first.status).toBe(201);
    const again = await viaSession();
    expect(again.headers.get('svc-idempotent-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
  });

  it('a replay does not hand out data the vault no longer holds: /detokenize after the card number and cvc were replaced is a 409', async () => {
    const owner = (await h.vault.caller({ name: 'owner', permissions: ['token:create', 'token:read', 'token:update', 'token:use'], rules: REVEAL as never })).key;
    const card = (await h.call('POST', '/tokens', { key: owner, body: { type: 'card', data: VISA } })).body;
    const detokenize = () => h.call('POST', '/detokenize', { key: owner, body: { c: `{{ ${card.id} }}` }, headers: { [KEY]: 'd-1' } });
    expect((await detokenize()).body.c.number).toBe(VISA.number);
    expect((await h.call('PATCH', `/tokens/${card.id}`, { key: owner, body: { data: { ...VISA, number: '5555555555554444', cvc: '999' } } })).status).toBe(200);
    const replay = await detokenize();
    expect(expectProblem(replay, 409).detail).toMatch(/changed, deleted or expired since/);
    expect(replay.text).not.toContain(VISA.number);
  });
});
