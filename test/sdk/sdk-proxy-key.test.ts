// Pre-configured proxies called with their key (docs/proxies.md, Calling a pre-configured proxy),
// through the real Basis Theory JS SDK and raw HTTP against the real server (--header-prefix BT),
// on both stores, with a local receiver as the destination: what the destination receives, what
// the caller gets, the inbound case (no API key, a tokenize transform), and the refusals.
import { expect, it } from 'vitest';
import type { AccessRule } from '../../src/permissions/permissions.js';
import { describeEachStore } from '../support/stores.js';
import { startReceiver } from '../proxy/receiver.js';
import { sdkFailure, startSdkServer } from './harness.js';

const RULES: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] }];
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const SECRET = 'sk_live_configured_secret';
const DEV = { reactors: { egress: { allowPrivateNetwork: true } } };

describeEachStore('Basis Theory SDK: bt.proxy with BT-PROXY-KEY', (store) => {
  it('runs the transforms of an authenticated proxy, keeps its key from the destination, and refuses wrong, rotated and foreign keys', async () => {
    const server = await startSdkServer(store, DEV);
    const receiver = await startReceiver();
    const { vault } = server;
    const admin = await vault.authenticate(vault.adminKey);
    const backendKey = await server.key({ permissions: ['token:create', 'token:use', 'proxy:invoke'], rules: RULES });
    const bt = await server.sdk(backendKey);
    const card = await bt.tokens.create({ type: 'card', data: CARD });
    const bound = await vault.caller({ type: 'private', permissions: ['token:create'], rules: RULES });
    const proxy = await vault.proxies.create(admin, {
      name: 'charges',
      destination_url: `${receiver.url}/base`,
      configuration: { API_KEY: SECRET },
      application: { id: bound.applicationId },
      request_transforms: [
        {
          type: 'code',
          code: "module.exports = async (req) => ({ headers: { ...req.args.headers, authorization: 'Bearer ' + req.configuration.API_KEY }, body: { ...req.args.body, seen: [req.args.method, req.args.path, req.args.query.a, typeof req.bt.tokens.create] } })",
        },
      ],
      response_transforms: [
        { type: 'mask', expression: '"secret":"(\\w+)"', replacement: '#' },
        { type: 'append_json', value: '{"via":"vault"}', location: '$.meta' },
        { type: 'append_header', value: 'yes', location: 'x-proxied' },
      ],
    });
    receiver.answer = (_request, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ secret: 'abc123', ok: true }));
    };

    const answer = (await bt.proxy.post({
      path: '/charges',
      query: { a: '1' },
      headers: { 'BT-PROXY-KEY': proxy.key! },
      body: { number: `{{ ${card.id} | json: '$.number' }}` },
      includeResponseHeaders: true,
    })) as { headers: Record<string, string>; data: unknown };
    const got = receiver.received[0]!;
    expect(got.url).toBe('/base/charges?a=1');
    expect(JSON.parse(got.body)).toEqual({ number: CARD.number, seen: ['POST', '/charges', '1', 'function'] });
    expect(got.headers['authorization']).toBe(`Bearer ${SECRET}`);
    expect(JSON.stringify(got.headers)).not.toContain(proxy.key!);
    expect(got.headers['bt-api-key']).toBeUndefined();
    expect(answer.data).toEqual({ secret: '######', ok: true, meta: { via: 'vault' } });
    expect(answer.headers['x-proxied']).toBe('yes');
    expect(answer.headers['bt-proxy-destination-status']).toBe('200');

    // The key in the query is taken out before forwarding; the other parameters stay as sent.
    const viaQuery = await fetch(`${server.url}/proxy/q?b=%20x&BT-Proxy-Key=${encodeURIComponent(proxy.key!)}&a=2`, {
      method: 'POST',
      headers: { 'BT-API-KEY': backendKey, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(viaQuery.status).toBe(200);
    expect(receiver.received[1]!.url).toBe('/base/q?b=%20x&a=2');

    // Response transforms run only on a 2xx: an error answer comes back as the destination sent it.
    receiver.answer = (_request, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ secret: 'abc123' }));
    };
    const failed = await fetch(`${server.url}/proxy`, {
      method: 'POST',
      headers: { 'BT-API-KEY': backendKey, 'BT-PROXY-KEY': proxy.key!, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(failed.status).toBe(500);
    expect(await failed.json()).toEqual({ secret: 'abc123' });
    expect(failed.headers.get('x-proxied')).toBeNull();
    const calls = receiver.received.length;

    const wrong = await sdkFailure(bt.proxy.post({ headers: { 'BT-PROXY-KEY': 'tvp_not_a_key' }, body: {} }));
    expect(wrong.status).toBe(401);
    const rotated = await vault.proxies.rotateKey(admin, proxy.id);
    const old = await sdkFailure(bt.proxy.post({ headers: { 'BT-PROXY-KEY': proxy.key! }, body: {} }));
    expect(old.status).toBe(401);
    expect(JSON.stringify(old.data)).not.toContain(proxy.key!);
    const noApiKey = await fetch(`${server.url}/proxy`, { method: 'POST', headers: { 'BT-PROXY-KEY': rotated.key!, 'content-type': 'application/json' }, body: '{}' });
    expect(noApiKey.status).toBe(401);
    expect((await noApiKey.json()).proxy_error.detail).toContain('requires an API key');
    const other = await vault.createTenant({ name: 'other' });
    const foreign = await vault.proxies.create(await vault.authenticate(other.application.key), { name: 'theirs', destination_url: receiver.url });
    expect((await sdkFailure(bt.proxy.post({ headers: { 'BT-PROXY-KEY': foreign.key! }, body: {} }))).status).toBe(401);
    const noInvoke = await server.sdk(await server.key({ permissions: ['token:create', 'token:use'], rules: RULES }));
    expect((await sdkFailure(noInvoke.proxy.post({ headers: { 'BT-PROXY-KEY': rotated.key! }, body: {} }))).status).toBe(403);
    expect(receiver.received).toHaveLength(calls);

    // A transform that fails is the vault's error, never the destination's answer.
    const broken = await vault.proxies.create(admin, {
      name: 'broken',
      destination_url: receiver.url,
      request_transform: { type: 'code', code: "module.exports = async () => { throw new Error('nope') }" },
    });
    const error = await sdkFailure(bt.proxy.post({ headers: { 'BT-PROXY-KEY': broken.key! }, body: {} }));
    expect(error.data.proxy_error).toBeDefined();
    expect(receiver.received).toHaveLength(calls);

    const entries = (await vault.logs.list(admin, { operation: 'proxy:invoke' })).data;
    const first = entries.find((entry) => entry.resource_id === proxy.id && entry.outcome === 'success')!;
    expect(JSON.parse(first.detail as string)).toMatchObject({
      proxy_id: proxy.id,
      authenticated: true,
      method: 'POST',
      path: '/base/charges',
      query_keys: ['a'],
      token_ids: [card.id],
      status: 200,
    });
    const logged = JSON.stringify(entries);
    for (const secret of [proxy.key!, rotated.key!, CARD.number, SECRET, backendKey]) expect(logged).not.toContain(secret);
  });

  it('inbound: a third party posts a card without an API key; the destination receives a token id; expressions are not evaluated; the rate limit holds', async () => {
    const server = await startSdkServer(store, { ...DEV, proxy: { inboundRateLimit: { perKey: { requests: 3, windowMs: 60_000 } } } });
    const receiver = await startReceiver();
    const { vault } = server;
    const admin = await vault.authenticate(vault.adminKey);
    const backendKey = await server.key({ permissions: ['token:create', 'token:read', 'token:use', 'proxy:invoke'], rules: RULES });
    const bt = await server.sdk(backendKey);
    const stored = await bt.tokens.create({ type: 'token', data: 'kept_secret_value' });
    const inbound = await vault.caller({ type: 'private', permissions: ['token:create'], rules: RULES });
    const proxy = await vault.proxies.create(admin, {
      name: 'inbound',
      destination_url: receiver.url,
      require_auth: false,
      application: { id: inbound.applicationId },
      request_transforms: [{ type: 'tokenize', expression: '{"type":"card","data":"{{ args.card }}"}' }],
    });
    const post = (body: unknown, key = proxy.key!) =>
      fetch(`${server.url}/proxy/orders`, { method: 'POST', headers: { 'BT-PROXY-KEY': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });

    const first = await post({ card: CARD, note: `{{ ${stored.id} }}` });
    expect(first.status).toBe(201);
    const sent = JSON.parse(receiver.received[0]!.body) as { card: string; note: string };
    expect(receiver.received[0]!.body).not.toContain(CARD.number);
    expect(sent.note).toBe(`{{ ${stored.id} }}`);
    expect(receiver.received[0]!.body).not.toContain('kept_secret_value');
    const token = await bt.tokens.retrieve(sent.card);
    expect(token.data).toMatchObject({ number: CARD.number });

    // The bound application lacks token:create: nothing is created, nothing sent.
    const reader = await vault.caller({ type: 'private', permissions: ['token:read'], rules: RULES });
    const cannot = await vault.proxies.create(admin, {
      name: 'cannot',
      destination_url: receiver.url,
      require_auth: false,
      application: { id: reader.applicationId },
      request_transform: { type: 'tokenize', expression: '{"type":"card","data":"{{ args.card }}"}' },
    });
    const refused = await post({ card: CARD }, cannot.key!);
    expect(refused.status).toBe(403);
    expect(JSON.stringify(await refused.json())).toContain('proxy_error');
    expect(receiver.received).toHaveLength(1);

    expect((await post({ card: CARD })).status).toBe(201);
    expect((await post({ card: CARD })).status).toBe(201);
    const audited = async () => (await vault.logs.list(admin, { operation: 'proxy:invoke' })).data.filter((entry) => entry.resource_id === proxy.id).length;
    const before = await audited();
    const limited = await post({ card: CARD });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await limited.json()).proxy_error.detail).toContain('Too many unauthenticated calls');
    expect(receiver.received).toHaveLength(3);
    // Refused by the limit: no audit entry, so a flood cannot fill the tenant's audit log.
    expect(await post({ card: CARD })).toMatchObject({ status: 429 });
    expect(await audited()).toBe(before);
    vault.clock.advance(60_000);
    expect((await post({ card: CARD })).status).toBe(201);
  });

  it('transforms act within the grants the proxy was bound with, never as the caller (in-process: vault.proxy(null, { key }))', async () => {
    const vault = await store.vault(DEV);
    const receiver = await startReceiver();
    const admin = await vault.authenticate(vault.adminKey);
    const owner = await vault.caller({ type: 'private', permissions: ['token:create', 'token:read', 'token:use'], rules: RULES });
    const stored = await vault.tokens.create(owner, { type: 'token', data: 'kept_secret_value' });
    const bound = await vault.caller({ type: 'private', permissions: ['token:create'], rules: RULES });
    const binder = await vault.caller({ type: 'private', permissions: ['proxy:create', 'token:create'], rules: RULES });
    const code = `module.exports = async (req) => ({ body: { read: (await req.bt.tokens.retrieve(${JSON.stringify(stored.id)})).data } })`;
    const byBinder = await vault.proxies.create(binder, {
      name: 'reader',
      destination_url: receiver.url,
      require_auth: false,
      application: { id: bound.applicationId },
      request_transform: { type: 'code', code },
    });
    const byAdmin = await vault.proxies.create(admin, {
      name: 'reader',
      destination_url: receiver.url,
      require_auth: false,
      application: { id: bound.applicationId },
      request_transform: { type: 'code', code },
    });
    // The application gains token:read after the binding: only the administrator's binding follows it.
    await vault.applications.update(admin, bound.applicationId, { name: 'bound', permissions: ['token:create', 'token:read'], rules: RULES });
    const call = (key: string) => vault.proxy(null, { key, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', clientAddress: '203.0.113.9' });

    await expect(call(byBinder.key!)).rejects.toThrow();
    expect(receiver.received).toHaveLength(0);
    const answer = await call(byAdmin.key!);
    expect(answer.status).toBe(201);
    expect(JSON.parse(receiver.received[0]!.body)).toEqual({ read: 'kept_secret_value' });
    await expect(vault.proxy(null as never, { method: 'GET', url: receiver.url })).rejects.toMatchObject({ code: 'authentication_error' });
  });
});
