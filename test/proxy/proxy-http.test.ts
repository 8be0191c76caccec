// The ephemeral proxy over HTTP (docs/proxies.md) on both stores, with a local receiver as the
// destination: what it receives, what the caller gets back, what is refused (and then never sent),
// the audit entry of each call, and that no key or detokenized value reaches a log, an entry or an error.
import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import type { Logger } from '../../src/common/logger.js';
import type { AccessRule } from '../../src/permissions/permissions.js';
import type { TestVault } from '../../src/testing/index.js';
import type { SetTimer } from '../../src/proxy/proxy-options.js';
import { describeEachStore } from '../support/stores.js';
import { startReceiver } from './receiver.js';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' };
const REVEAL_ALL: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:use'] }];

describeEachStore('ephemeral proxy over HTTP', (store) => {
  async function setup(options: Parameters<typeof store.vault>[0] = {}) {
    const logged: string[] = [];
    const logger: Logger = {
      info: (m, f) => logged.push(m + JSON.stringify(f ?? {})),
      warn: (m, f) => logged.push(m + JSON.stringify(f ?? {})),
      error: (m, f) => logged.push(m + JSON.stringify(f ?? {})),
    };
    const vault: TestVault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } }, logger, ...options });
    const exchanges: unknown[] = [];
    const handler = createFetchHandler(vault, { headerPrefix: 'BT', logger, maxBodyBytes: 4096, onExchange: (event) => exchanges.push(event) });
    const app = await vault.caller({ permissions: ['token:create', 'token:use', 'proxy:invoke'], rules: REVEAL_ALL });
    const card = await vault.tokens.create(app, { type: 'card', data: CARD });
    const secret = await vault.tokens.create(app, { type: 'token', data: 'sk_live_abc' });
    const call = (path: string, init: { method?: string; headers?: Record<string, string>; body?: string; key?: string } = {}) =>
      handler(
        new Request(`http://vault${path}`, {
          method: init.method ?? 'POST',
          headers: { 'BT-API-KEY': init.key ?? app.key, ...init.headers },
          ...(init.body === undefined ? {} : { body: init.body }),
        }),
      );
    const audit = async () => {
      const admin = await vault.authenticate(vault.adminKey);
      return (await vault.logs.list(admin, { operation: 'proxy:invoke' })).data;
    };
    return { vault, app, card, secret, call, audit, logged, exchanges };
  }

  it('detokenizes JSON bodies and header values, appends path and query, and returns the destination answer as it is', async () => {
    const { app, card, secret, call, audit, logged, exchanges } = await setup();
    const receiver = await startReceiver();
    const response = await call('/proxy/v1/charges?amount=10', {
      headers: {
        'BT-PROXY-URL': `${receiver.url}/api?currency=usd`,
        'BT-IDEMPOTENCY-KEY': 'k1',
        'content-type': 'application/json',
        authorization: `Bearer {{ ${secret.id} }}`,
        connection: 'x-hop',
        'x-hop': 'dropped',
        'x-kept': 'kept',
      },
      body: JSON.stringify({ card: `{{ ${card.id} }}`, number: `{{ ${card.id} | json: '$.number' }}`, note: 'plain' }),
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('bt-proxy-destination-status')).toBe('201');
    expect(response.headers.get('x-destination')).toBe('yes');
    expect(response.headers.get('set-cookie')).toBeNull();
    const [got] = receiver.received;
    expect(got!.method).toBe('POST');
    expect(got!.url).toBe('/api/v1/charges?currency=usd&amount=10');
    expect(JSON.parse(got!.body)).toEqual({ card: CARD, number: CARD.number, note: 'plain' });
    expect(await response.json()).toEqual({ echoed: got!.body.length });
    expect(got!.headers['authorization']).toBe('Bearer sk_live_abc');
    expect(got!.headers['x-kept']).toBe('kept');
    for (const name of ['bt-api-key', 'bt-proxy-url', 'bt-idempotency-key', 'x-hop']) expect(got!.headers[name]).toBeUndefined();

    expect(exchanges).toEqual([expect.objectContaining({ method: 'POST', route: '/proxy', status: 201, applicationId: app.applicationId })]);
    const [entry] = await audit();
    expect(entry).toMatchObject({ actor: app.applicationId, operation: 'proxy:invoke', resource_id: 'localhost', outcome: 'success' });
    expect(JSON.parse(entry!.detail!)).toMatchObject({
      method: 'POST',
      host: 'localhost',
      path: '/api/v1/charges',
      query_keys: ['currency', 'amount'],
      token_ids: [secret.id, card.id],
      status: 201,
    });
    const everything = JSON.stringify(await audit()) + logged.join('\n');
    for (const leak of [app.key, 'sk_live_abc', CARD.number, 'usd']) expect(everything).not.toContain(leak);
  });

  it('detokenizes form and text bodies and passes a body without expressions byte for byte', async () => {
    const { card, call } = await setup();
    const receiver = await startReceiver();
    const base = { 'BT-PROXY-URL': receiver.url };
    await call('/proxy', { headers: { ...base, 'content-type': 'application/x-www-form-urlencoded' }, body: `card[number]={{ ${card.id} | json: '$.number' }}&x=a+b` });
    await call('/proxy', { method: 'PUT', headers: { ...base, 'content-type': 'text/plain' }, body: `cvc={{ ${card.id} | json: '$.cvc' }};` });
    await call('/proxy', { headers: { ...base, 'content-type': 'application/json' }, body: '{ "spaced" :  1 }' });
    expect(new URLSearchParams(receiver.received[0]!.body).get('card[number]')).toBe(CARD.number);
    expect(new URLSearchParams(receiver.received[0]!.body).get('x')).toBe('a b');
    expect(receiver.received[1]).toMatchObject({ method: 'PUT', body: 'cvc=123;' });
    expect(receiver.received[2]!.body).toBe('{ "spaced" :  1 }');
  });

  it('does not follow redirects and answers destination errors as the destination sent them', async () => {
    const { call } = await setup();
    const receiver = await startReceiver();
    receiver.answer = (_request, res) => {
      res.writeHead(302, { location: `${receiver.url}/elsewhere` });
      res.end();
    };
    const redirected = await call('/proxy', { method: 'GET', headers: { 'BT-PROXY-URL': receiver.url } });
    expect(redirected.status).toBe(302);
    expect(redirected.headers.get('location')).toBe(`${receiver.url}/elsewhere`);
    expect(receiver.received).toHaveLength(1);
    receiver.answer = (_request, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('upstream broke');
    };
    const failed = await call('/proxy', { method: 'GET', headers: { 'BT-PROXY-URL': receiver.url } });
    expect(failed.status).toBe(500);
    expect(failed.headers.get('bt-proxy-destination-status')).toBe('500');
    expect(await failed.text()).toBe('upstream broke');
  });

  it('refuses, in its own words and without sending anything, what the rules do not allow', async () => {
    const { vault, card, call, audit, logged } = await setup({ reactors: { egress: { allowPrivateNetwork: true } }, proxy: { maxTokens: 2 } });
    const receiver = await startReceiver();
    const json = { 'BT-PROXY-URL': receiver.url, 'content-type': 'application/json' };
    const noUse = await vault.caller({
      permissions: ['proxy:invoke', 'token:read', 'token:use'],
      rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:read'] }],
    });
    const noProxy = await vault.caller({ permissions: ['token:use'], rules: REVEAL_ALL.map((r) => ({ ...r, permissions: ['token:use'] })) });
    const writer = await vault.caller({ permissions: ['token:create'] });
    const t2 = await vault.tokens.create(writer, { type: 'token', data: 'two' });
    const t3 = await vault.tokens.create(writer, { type: 'token', data: 'three' });
    const cases: [string, Response, number, string][] = [
      ['missing URL', await call('/proxy', { body: '{}', headers: { 'content-type': 'application/json' } }), 400, 'BT-PROXY-URL'],
      ['no proxy:invoke', await call('/proxy', { key: noProxy.key, headers: json, body: '{}' }), 403, 'proxy:invoke'],
      ['token without use', await call('/proxy', { key: noUse.key, headers: json, body: JSON.stringify({ c: `{{ ${card.id} }}` }) }), 403, 'token:use'],
      ['unknown token', await call('/proxy', { headers: json, body: JSON.stringify({ c: '{{ 7c0a3b2e-0000-4000-8000-000000000000 }}' }) }), 400, 'does not exist'],
      ['too many tokens', await call('/proxy', { headers: json, body: JSON.stringify({ a: `{{ ${card.id} }}`, b: `{{ ${t2.id} }}`, c: `{{ ${t3.id} }}` }) }), 400, 'at most 2'],
      ['body too large', await call('/proxy', { headers: json, body: JSON.stringify({ pad: 'x'.repeat(5000) }) }), 413, 'limit'],
      ['invalid JSON', await call('/proxy', { headers: json, body: `{ "a": "{{ ${card.id} }}"` }), 400, 'not valid JSON'],
      ['IP literal', await call('/proxy', { headers: { 'BT-PROXY-URL': 'https://10.0.0.1/' }, body: 'x' }), 400, 'DNS name'],
      ['ftp', await call('/proxy', { headers: { 'BT-PROXY-URL': 'ftp://example.com/' }, body: 'x' }), 400, 'https'],
      ['credentials', await call('/proxy', { headers: { 'BT-PROXY-URL': 'https://u:p@example.com/' }, body: 'x' }), 400, 'credentials'],
      ['header split', await call('/proxy', { headers: { ...json, 'x-a': `{{ ${t2.id} | append: '\\n' }}` }, body: '{}' }), 400, 'line break'],
      ['bad method', await call('/proxy', { method: 'PROPFIND', headers: json }), 405, 'method'],
    ];
    for (const [what, response, status, words] of cases) {
      const body = (await response.json()) as { proxy_error: { status: number; detail: string; errors?: unknown } };
      expect({ what, status: response.status }).toEqual({ what, status });
      expect(body.proxy_error.status).toBe(status);
      expect(JSON.stringify(body.proxy_error), what).toContain(words);
      expect(JSON.stringify(body)).not.toContain(CARD.number);
    }
    expect(receiver.received).toHaveLength(0);
    const entries = await audit();
    // A method the proxy does not carry is a 405 before the service runs: no audit entry (docs/proxies.md, Methods).
    expect(entries.filter((e) => e.outcome === 'failure').length).toBeGreaterThanOrEqual(cases.length - 3);
    expect(JSON.stringify(entries) + logged.join('\n')).not.toContain(CARD.number);
  });

  it('refuses loopback, plain http and unlisted ports without the development switch, and when the tenant turned it off', async () => {
    const receiver = await startReceiver();
    const strict = await setup({ reactors: { egress: { allowPrivateNetwork: false } } });
    const viaName = await strict.call('/proxy', { headers: { 'BT-PROXY-URL': `https://localhost.localdomain.test:443/` }, body: 'x' });
    expect(viaName.status).toBe(400);
    const http = await strict.call('/proxy', { headers: { 'BT-PROXY-URL': receiver.url }, body: 'x' });
    expect(((await http.json()) as { proxy_error: { detail: string } }).proxy_error.detail).toContain('https');
    const port = await strict.call('/proxy', { headers: { 'BT-PROXY-URL': 'https://example.com:22/' }, body: 'x' });
    expect(port.status).toBe(400);
    const off = await setup({ proxy: { ephemeral: false } });
    const refused = await off.call('/proxy', { headers: { 'BT-PROXY-URL': receiver.url }, body: 'x' });
    expect(refused.status).toBe(403);
    expect(receiver.received).toHaveLength(0);
  });

  it('ends a destination that does not answer in time (504) and one that answers too much (502)', async () => {
    const timers: (() => void)[] = [];
    const setTimer: SetTimer = (_ms, fire) => {
      timers.push(fire);
      return () => undefined;
    };
    const { call } = await setup({ reactors: { egress: { allowPrivateNetwork: true } }, proxy: { setTimer, maxResponseBytes: 1000 } });
    const receiver = await startReceiver();
    let arrived!: () => void;
    const hung = new Promise<void>((resolve) => (arrived = resolve));
    receiver.answer = () => arrived(); // never answers
    const pending = call('/proxy', { method: 'GET', headers: { 'BT-PROXY-URL': receiver.url } });
    await hung;
    timers.at(-1)!();
    const timedOut = await pending;
    expect(timedOut.status).toBe(504);
    receiver.answer = (_request, res) => res.end('y'.repeat(5000));
    const big = await call('/proxy', { method: 'GET', headers: { 'BT-PROXY-URL': receiver.url } });
    expect(big.status).toBe(502);
    expect(JSON.stringify(await big.json())).toContain('limit of 1000 bytes');
  });
});
