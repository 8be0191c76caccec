// Red-team findings on pre-configured proxies called with their key (docs/proxies.md, Calling a
// pre-configured proxy; Transforms), each failing before its fix, on both stores.
import { expect, it } from 'vitest';
import { describeEachStore } from '../support/stores.js';

const TEXT = { 'content-type': 'text/plain' };

describeEachStore('pre-configured proxy findings', (store) => {
  it("a mask's backtracking expression runs in the sandbox within its deadline, never on the thread that serves requests", async () => {
    let answer = 'a'.repeat(25) + 'b';
    const vault = await store.vault({ reactors: { limits: { timeoutMs: 300 } }, proxy: { unsafeFetch: async () => new Response(answer, { status: 200, headers: TEXT }) } });
    const admin = await vault.authenticate(vault.adminKey);
    // The author's expression backtracks exponentially over the destination's `aaaa…b`.
    const proxy = await vault.proxies.create(admin, {
      name: 'masking',
      destination_url: 'https://api.example.com/',
      require_auth: false,
      response_transforms: [{ type: 'mask', expression: '^(a+)+$' }],
    });
    const call = () => vault.proxy(null, { key: proxy.key!, method: 'GET', clientAddress: '203.0.113.7' });
    let ticked = false;
    setTimeout(() => (ticked = true), 0);
    await expect(call()).rejects.toMatchObject({ message: expect.stringContaining('time limit') });
    expect(ticked).toBe(true);
    // An ordinary mask still masks, counting characters (not UTF-16 units) of the group.
    answer = 'pan=4242424242424242 née=😀😀x';
    const plain = await vault.proxies.create(admin, {
      name: 'plain',
      destination_url: 'https://api.example.com/',
      require_auth: false,
      response_transforms: [
        { type: 'mask', expression: '(\\d{12})\\d{4}' },
        { type: 'mask', expression: 'née=(\\S+)', replacement: '#' },
      ],
    });
    const masked = await vault.proxy(null, { key: plain.key!, method: 'GET', clientAddress: '203.0.113.7' });
    expect(new TextDecoder().decode(masked.body)).toBe('pan=************4242 née=###');
  });

  it('a call refused after its request tokenize made a token names that token in its audit entry (the no-leak proxy-call property found it)', async () => {
    const vault = await store.vault({ proxy: { unsafeFetch: async () => new Response('{"issued":"x"}', { status: 200, headers: { 'content-type': 'application/json' } }) } });
    const admin = await vault.authenticate(vault.adminKey);
    // The application may create cards in /pci/ but nothing in /general/: the response tokenize fails after the request one.
    const app = await vault.caller({
      type: 'private',
      permissions: ['token:create'],
      rules: [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:create'] }],
    });
    const proxy = await vault.proxies.create(admin, {
      name: 'two tokenizes',
      destination_url: 'https://api.example.com/',
      require_auth: false,
      application: { id: app.applicationId },
      request_transforms: [{ type: 'tokenize', expression: '{"type":"card","data":"{{ args.card }}"}' }],
      response_transforms: [{ type: 'tokenize', expression: '{"type":"token","data":"{{ args.issued }}","containers":["/general/high/"]}' }],
    });
    const body = JSON.stringify({ card: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 } });
    await expect(vault.proxy(null, { key: proxy.key!, method: 'POST', headers: { 'content-type': 'application/json' }, body })).rejects.toMatchObject({
      code: 'authorization_error',
    });
    const entry = (await vault.logs.list(admin, { operation: 'proxy:invoke' })).data.find((e) => e.resource_id === proxy.id)!;
    const made = (await vault.logs.list(admin, { operation: 'token:create' })).data.filter((e) => e.outcome === 'success').map((e) => e.resource_id);
    expect(entry.outcome).toBe('failure');
    expect(JSON.parse(entry.detail!).created_token_ids).toEqual(made);
    expect(made).toHaveLength(1);
  });
});
