// Code transforms stored before the vault passed Basis Theory's shape (docs/proxies.md, Code
// transforms): such a transform has no `options` and keeps the shape it was written for
// (`req.args` the body, headers, method, path and query beside it), on both stores; one created
// now, with the same code, gets Basis Theory's `req.args = { body, headers, ... }`.
import { expect, it } from 'vitest';
import { describeEachStore } from '../support/stores.js';
import { startSdkServer } from '../sdk/harness.js';
import { startReceiver } from './receiver.js';

const OLD_SHAPE = "module.exports = async (req) => ({ headers: { ...req.headers, 'x-seen': req.method + ' ' + req.path }, body: { ...req.args, status: typeof req.status } })";
const RESPONSE_OLD_SHAPE = 'module.exports = async (req) => ({ body: { answer: req.args, status: req.status } })';

describeEachStore('proxy code transforms stored before runtimes were recorded', (store) => {
  it('keep the tokenvault shape; the same code created now reads Basis Theory’s', async () => {
    const server = await startSdkServer(store, { reactors: { egress: { allowPrivateNetwork: true } } });
    const receiver = await startReceiver();
    const { vault } = server;
    const admin = await vault.authenticate(vault.adminKey);
    const caller = await server.key({ permissions: ['proxy:invoke'] });
    const proxy = await vault.proxies.create(admin, {
      name: 'old',
      destination_url: receiver.url,
      request_transforms: [{ type: 'code', code: OLD_SHAPE }],
      response_transforms: [{ type: 'code', code: RESPONSE_OLD_SHAPE }],
    });
    const invoke = () =>
      fetch(`${server.url}/proxy/pay`, {
        method: 'POST',
        headers: { 'BT-PROXY-KEY': proxy.key!, 'BT-API-KEY': caller, 'content-type': 'application/json' },
        body: JSON.stringify({ amount: 3 }),
      });

    // Created now: Basis Theory's shape, so this old-shaped code sees args = { body, ... }.
    const now = await invoke();
    expect(now.status).toBe(201);
    expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({ body: { amount: 3 }, method: 'POST', status: 'undefined' });
    expect(receiver.received[0]!.headers['x-seen']).toBe('undefined undefined');

    // As an earlier version stored it: no options.
    await vault.store.updateProxy(vault.tenantId, proxy.id, {
      requestTransforms: [{ type: 'code', code: OLD_SHAPE }],
      responseTransforms: [{ type: 'code', code: RESPONSE_OLD_SHAPE }],
      modifiedBy: null,
      modifiedAt: vault.clock.now(),
    });
    const before = await invoke();
    expect(before.status).toBe(201);
    expect(JSON.parse(receiver.received[1]!.body)).toEqual({ amount: 3, status: 'undefined' });
    expect(receiver.received[1]!.headers['x-seen']).toBe('POST /pay');
    expect(await before.json()).toEqual({ answer: { echoed: expect.any(Number) }, status: 201 });
    const read = await vault.proxies.get(admin, proxy.id);
    expect(read.request_transforms).toEqual([{ type: 'code', code: OLD_SHAPE }]);
  });
});
