/**
 * A replay of a reactor's output must not outlive the tokens the run read
 * through req.bt (as the reactor's application), nor that application's grants.
 */
import { beforeEach, expect, it } from 'vitest';
import { btTokenIds } from '../../src/reactors/bt-bridge.js';
import { type Harness, VISA, expectProblem, harness } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

const KEY = 'SVC-IDEMPOTENCY-KEY';
const REVEAL = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:use'] }];
/** Reads the token named (by plain id, not a `{{ }}` expression) in args through bt, and returns its number. */
const READ_THROUGH_BT = 'module.exports = async (req) => ({ raw: { number: (await req.bt.tokens.retrieve(req.args.id)).data.number } })';

describeEachStore('HTTP idempotency of reactor output', (store) => {
  let h: Harness;
  let owner: string;
  let payments: { id: string; key: string };
  let invoker: string;
  let cardId: string;

  beforeEach(async () => {
    h = await harness({}, store);
    owner = (await h.vault.caller({ name: 'owner', permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:use'], rules: REVEAL as never })).key;
    const app = await h.vault.caller({
      name: 'payments',
      permissions: ['token:create', 'token:read', 'token:use'],
      rules: [{ ...REVEAL[0]!, permissions: ['token:create', 'token:read', 'token:use'] }] as never,
    });
    payments = { id: app.applicationId, key: app.key };
    // The invoker may run reactors; the token it never names in an expression.
    invoker = (await h.vault.caller({ name: 'invoker', permissions: ['token:use'] })).key;
    cardId = (await h.call('POST', '/tokens', { key: owner, body: { type: 'card', data: VISA } })).body.id;
  });

  async function reactor(code: string, name = 'reader'): Promise<string> {
    const created = await h.call('POST', '/reactors', { key: h.adminKey, body: { name, code, application: { id: payments.id } } });
    expect(created.status, created.text).toBe(201);
    return created.body.id;
  }

  const react = (reactorId: string, key: string, args: unknown = { id: cardId }) =>
    h.call('POST', `/reactors/${reactorId}/react`, { key: invoker, body: { args }, headers: { [KEY]: key } });

  it('a replay after a token the run read through req.bt changed is a 409 saying so; after it was deleted, the response is withdrawn', async () => {
    const id = await reactor(READ_THROUGH_BT);
    const first = await react(id, 'k-1');
    expect(first.status, first.text).toBe(200);
    expect(first.body.raw.number).toBe(VISA.number);
    const again = await react(id, 'k-1');
    expect(again.headers.get('svc-idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);

    expect((await h.call('PATCH', `/tokens/${cardId}`, { key: owner, body: { data: { ...VISA, number: '5555555555554444' } } })).status).toBe(200);
    const changed = await react(id, 'k-1');
    expect(expectProblem(changed, 409).detail).toMatch(/reactor run behind this idempotency key read, created or changed through req\.bt was changed/);
    expect(changed.text).not.toContain(VISA.number);

    expect((await react(id, 'k-2')).body.raw.number).toBe('5555555555554444');
    expect((await h.call('DELETE', `/tokens/${cardId}`, { key: owner })).status).toBe(204);
    expectProblem(await h.call('GET', `/tokens/${cardId}`, { key: owner }), 404);
    const deleted = await react(id, 'k-2');
    expect(expectProblem(deleted, 409).detail).toMatch(/withdrawn/);
    expect(deleted.text).not.toContain('5555555555554444');
  });

  it('a token a nested reactor read counts too', async () => {
    const inner = await reactor(READ_THROUGH_BT, 'inner');
    const outer = await reactor(`module.exports = async (req) => ({ raw: (await req.bt.reactors.react('${inner}', { args: { id: req.args.id } })).raw })`, 'outer');
    expect((await react(outer, 'n-1')).body.raw.number).toBe(VISA.number);
    expect((await react(outer, 'n-1')).headers.get('svc-idempotent-replayed')).toBe('true');
    expect((await h.call('PATCH', `/tokens/${cardId}`, { key: owner, body: { data: { ...VISA, cvc: '999' } } })).status).toBe(200);
    expectProblem(await react(outer, 'n-1'), 409);
  });

  it("a replay does not outlive the reactor application's grants", async () => {
    const id = await reactor(READ_THROUGH_BT);
    expect((await react(id, 'g-1')).body.raw.number).toBe(VISA.number);
    expect((await react(id, 'g-1')).headers.get('svc-idempotent-replayed')).toBe('true');
    // The reactor's application may now only see cards masked: the stored number must not come back.
    const masked = [{ priority: 0, container: '/', transform: 'mask', permissions: ['token:create', 'token:read', 'token:use'] }];
    const updated = await h.call('PUT', `/applications/${payments.id}`, {
      key: h.adminKey,
      body: { name: 'payments', permissions: ['token:create', 'token:read', 'token:use'], rules: masked },
    });
    expect(updated.status, updated.text).toBe(200);
    const replay = await react(id, 'g-1');
    expect(expectProblem(replay, 409).detail).toMatch(/application a reactor ran as .* permissions or access rules changed/);
    expect(replay.text).not.toContain(VISA.number);
    expect((await react(id, 'g-2')).body.raw.number).toBe('XXXXXXXXXXXX4242');
  });

  it('a run that read nothing through bt replays as before, also after unrelated tokens change', async () => {
    const id = await reactor('module.exports = async (req) => ({ raw: { ok: req.args.id.length } })');
    const first = await react(id, 'p-1');
    expect((await h.call('DELETE', `/tokens/${cardId}`, { key: owner })).status).toBe(204);
    const again = await react(id, 'p-1');
    expect(again.headers.get('svc-idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
  });
});

it('bt results are followed by their token views only: an id inside a token’s data or metadata does not count', () => {
  const view = (id: string, extra: Record<string, unknown> = {}) => ({ id, type: 'token', tenant_id: 't', ...extra });
  expect(btTokenIds('tokens.retrieve', view('a', { data: { id: 'planted', type: 'x', tenant_id: 't' }, metadata: { id: 'also-planted' } }))).toEqual(['a']);
  expect(btTokenIds('tokens.list', { pagination: {}, data: [view('a'), view('b')] })).toEqual(['a', 'b']);
  expect(btTokenIds('tokenize', { card: view('c'), nested: [view('d'), 'text'] })).toEqual(['c', 'd']);
  expect(btTokenIds('reactors.react', { raw: view('e') })).toEqual([]);
  expect(btTokenIds('tokens.delete', null)).toEqual([]);
});
