// bt.proxy.* of the real Basis Theory JS SDK against the real server (--header-prefix BT), on both
// stores, with a local receiver as the destination (docs/proxies.md).
import { expect, it } from 'vitest';
import type { AccessRule } from '../../src/permissions/permissions.js';
import { describeEachStore } from '../support/stores.js';
import { startReceiver } from '../proxy/receiver.js';
import { sdkFailure, startSdkServer } from './harness.js';

const RULES: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:use'] }];

describeEachStore('Basis Theory SDK: bt.proxy', (store) => {
  it('posts through the ephemeral proxy with detokenized data, and reads the vault refusals as proxy_error', async () => {
    const server = await startSdkServer(store, { reactors: { egress: { allowPrivateNetwork: true } }, proxy: { maxTokens: 2 } });
    const receiver = await startReceiver();
    const bt = await server.sdk(await server.key({ permissions: ['token:create', 'token:use', 'proxy:invoke'], rules: RULES }));
    const card = await bt.tokens.create({ type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 } });

    const answer = await bt.proxy.post({
      path: '/charges',
      query: { amount: '10' },
      headers: { 'BT-PROXY-URL': receiver.url, 'X-Card-Last4': `{{ ${card.id} | json: '$.number' | last4 }}` },
      body: { number: `{{ ${card.id} | json: '$.number' }}`, month: `{{ ${card.id} | json: '$.expiration_month' }}` },
    });
    expect(answer).toEqual({ echoed: receiver.received[0]!.body.length });
    const got = receiver.received[0]!;
    expect(got.url).toBe('/charges?amount=10');
    expect(JSON.parse(got.body)).toEqual({ number: '4242424242424242', month: '12' });
    expect(got.headers['x-card-last4']).toBe('4242');
    expect(got.headers['bt-api-key']).toBeUndefined();
    const withHeaders = (await bt.proxy.post({ headers: { 'BT-PROXY-URL': receiver.url }, body: {}, includeResponseHeaders: true })) as { headers: Record<string, string> };
    expect(withHeaders.headers['bt-proxy-destination-status']).toBe('201');

    const missing = await sdkFailure(bt.proxy.post({ body: { a: 1 } }));
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.data)).toContain('BT-PROXY-URL');
    const noUse = await server.sdk(
      await server.key({ permissions: ['proxy:invoke', 'token:read', 'token:use'], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:read'] }] }),
    );
    const refused = await sdkFailure(noUse.proxy.post({ headers: { 'BT-PROXY-URL': receiver.url }, body: { n: `{{ ${card.id} }}` } }));
    expect(refused.status).toBe(403);
    const tooMany = await sdkFailure(bt.proxy.post({ headers: { 'BT-PROXY-URL': receiver.url }, body: { a: `{{ ${card.id} }}`, b: '{{ x1 }}', c: '{{ x2 }}' } }));
    expect(tooMany.status).toBe(400);
    expect(JSON.stringify(tooMany.data)).not.toContain('4242424242424242');
    expect(receiver.received).toHaveLength(2);
  });

  it('refuses a private destination when the development switch is off', async () => {
    const server = await startSdkServer(store);
    const receiver = await startReceiver();
    const bt = await server.sdk(await server.key({ permissions: ['proxy:invoke'] }));
    const http = await sdkFailure(bt.proxy.get({ headers: { 'BT-PROXY-URL': receiver.url } }));
    expect(http.status).toBe(400);
    const loopbackName = await sdkFailure(bt.proxy.get({ headers: { 'BT-PROXY-URL': `https://localhost:${receiver.port}` } }));
    expect(loopbackName.status).toBe(400);
    expect(receiver.received).toHaveLength(0);
  });
});
