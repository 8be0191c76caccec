import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { describeEachStore } from '../support/stores.js';
import { checkWebhookUrl } from '../../src/webhooks/webhook-url.js';
import { startReceiver, type Receiver } from './receiver.js';

// A name that resolves to loopback (DNS rebinding, or a name pointing inside): the create-time check
// cannot know it; the delivery-time check resolves it and refuses.
vi.mock('node:dns/promises', async (original) => {
  const actual = await original<typeof import('node:dns/promises')>();
  const lookup = (async (host: string, options: unknown) => {
    if (host === 'inside.example.com') return [{ address: '127.0.0.1', family: 4 }];
    if (host === 'db.example.com') return [{ address: '10.0.0.7', family: 4 }];
    if (host === 'nowhere.example.com') throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return actual.lookup(host, options as never);
  }) as typeof actual.lookup;
  return { ...actual, lookup, default: { ...actual, lookup } };
});

const REFUSED = [
  'http://127.0.0.1/', // loopback
  'http://127.9.9.9:8080/', // loopback range
  'http://2130706433/', // loopback, decimal form
  'http://0x7f.0.0.1/', // loopback, hex form
  'http://localhost/',
  'http://api.localhost/',
  'http://0.0.0.0/', // unspecified
  'http://10.1.2.3/', // private
  'http://172.16.0.1/',
  'http://192.168.1.1/',
  'http://169.254.169.254/latest/meta-data/', // link-local, cloud metadata
  'http://100.64.0.1/', // CGNAT
  'http://[::1]/', // IPv6 loopback
  'http://[::ffff:127.0.0.1]/', // IPv4-mapped loopback
  'http://[fe80::1]/', // IPv6 link-local
  'http://[fc00::1]/', // unique local
  'http://[fd00:ec2::254]/', // AWS IPv6 metadata
  'http://[64:ff9b::a9fe:a9fe]/', // NAT64 of 169.254.169.254
];

it.each(REFUSED)('refuses %s when it is given (webhook or callback URL)', (url) => {
  expect(() => checkWebhookUrl(url, 'callback_url', false)).toThrow(/callback_url: must not point to a loopback, private, link-local/);
  expect(checkWebhookUrl(url, 'callback_url', true)).toBe(url);
});

it('accepts public addresses and names (resolved at delivery, not here)', () => {
  for (const url of ['https://8.8.8.8/', 'https://hooks.example.com/x?y=1', 'http://[2606:4700::1111]/']) expect(checkWebhookUrl(url, 'url', false)).toBe(url);
});

describeEachStore('webhook SSRF refusals', (store) => {
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  it('every literal class is refused at create and update (400, nothing stored)', async () => {
    const vault = await store.vault();
    const admin = await vault.authenticate(vault.adminKey);
    const ok = await vault.webhooks.create(admin, { name: 'ok', url: 'https://hooks.example.com/', events: ['token.created'] });
    for (const url of REFUSED) {
      await expect(vault.webhooks.create(admin, { name: 'x', url, events: ['token.created'] })).rejects.toMatchObject({
        code: 'validation_error',
        errors: { url: [expect.stringContaining('non-public')] },
      });
      await expect(vault.webhooks.update(admin, ok.id, { name: 'x', url, events: ['token.created'] })).rejects.toMatchObject({ code: 'validation_error' });
    }
    expect((await vault.webhooks.list(admin)).data).toEqual([ok]);
  });

  it('at delivery, a name resolving to loopback is refused (the receiver gets nothing) unless the private network is allowed', async () => {
    const vault = await store.vault();
    const admin = await vault.authenticate(vault.adminKey);
    const app = await vault.caller({ permissions: ['token:create'] });
    const port = new URL(receiver.url).port;
    const hook = await vault.webhooks.create(admin, { name: 'inside', url: `http://inside.example.com:${port}/hooks`, events: ['token.created'] });
    await vault.tokens.create(app, { type: 'token', data: 'x' });
    await vault.worker.runDue();
    expect(receiver.received).toEqual([]);
    const [delivery] = (await vault.webhooks.deliveries(admin, hook.id)).data;
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1, history: [{ status: null, error: 'delivery refused: the destination is not allowed' }] });

    const open = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const openAdmin = await open.authenticate(open.adminKey);
    await open.webhooks.create(openAdmin, { name: 'inside', url: `http://inside.example.com:${port}/hooks`, events: ['token.created'] });
    await open.tokens.create(await open.caller({ permissions: ['token:create'] }), { type: 'token', data: 'x' });
    await open.worker.runDue();
    expect(receiver.received).toHaveLength(1);
  });

  it('a refused delivery tells nothing of the DNS answer: a name that does not resolve, one resolving to loopback and one to a private address read alike', async () => {
    const vault = await store.vault();
    const admin = await vault.authenticate(vault.adminKey);
    const app = await vault.caller({ permissions: ['token:create'] });
    const hosts = ['nowhere.example.com', 'inside.example.com', 'db.example.com'];
    const hooks = [];
    for (const host of hosts) hooks.push(await vault.webhooks.create(admin, { name: host, url: `http://${host}/hooks`, events: ['token.created'] }));
    await vault.tokens.create(app, { type: 'token', data: 'x' });
    await vault.worker.runDue();
    for (const [i, hook] of hooks.entries()) {
      const [delivery] = (await vault.webhooks.deliveries(admin, hook.id)).data;
      // No host, no kind of address, and no time spent (the time of a lookup would tell again whether it resolved).
      expect(delivery, hosts[i]).toMatchObject({
        status: 'pending',
        attempts: 1,
        history: [{ status: null, error: 'delivery refused: the destination is not allowed', duration_ms: 0 }],
      });
    }
    expect(receiver.received).toEqual([]);
  });
});
