// Red-team findings on the proxy from outside (an attacker holding one proxy key, or one API key),
// each failing before its fix, on both stores (docs/proxies.md).
import { gzipSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { describeEachStore } from '../support/stores.js';

const JSON_TYPE = { 'content-type': 'application/json' };
const CREATE_ONLY = [{ priority: 0, container: '/', transform: 'reveal' as const, permissions: ['token:create' as const] }];

describeEachStore('proxy red-team findings', (store) => {
  it('reads at most three stacked content codings: a body naming more is a 415 before any is undone, nothing sent', async () => {
    const sent: string[] = [];
    const vault = await store.vault({
      proxy: { unsafeFetch: async (_url, init) => (sent.push(new TextDecoder().decode(init?.body as Uint8Array)), new Response('{}', { status: 200 })) },
    });
    const admin = await vault.authenticate(vault.adminKey);
    const tokenizer = await vault.caller({ type: 'private', permissions: ['token:create'], rules: CREATE_ONLY });
    const inbound = await vault.proxies.create(admin, {
      name: 'intake',
      destination_url: 'https://api.example.com/',
      require_auth: false,
      application: { id: tokenizer.applicationId },
      request_transforms: [{ type: 'tokenize', expression: '{ "type": "token", "data": "{{ args.secret }}" }' }],
    });
    const wrapped = (layers: number) => {
      let body: Uint8Array = Buffer.from(JSON.stringify({ secret: 'x' }));
      for (let i = 0; i < layers; i++) body = gzipSync(body, { level: 0 });
      return body;
    };
    // Each layer may decompress to the whole body limit: without a cap on their number, one small
    // unauthenticated request (thousands of layers, a 10 KB header) held zlib for seconds.
    const call = (layers: number) =>
      vault.proxy(null, {
        key: inbound.key!,
        method: 'POST',
        clientAddress: '198.51.100.4',
        headers: { ...JSON_TYPE, 'content-encoding': Array(layers).fill('gzip').join(', ') },
        body: wrapped(layers),
      });
    await expect(call(4)).rejects.toMatchObject({
      code: 'unsupported_media_type',
      message: 'The request body names 4 Content-Encodings: the proxy undoes at most 3; send it uncompressed, or compressed once',
    });
    expect(sent).toEqual([]);
    expect((await call(3)).status).toBe(200);
    expect(JSON.parse(sent[0]!)).toEqual({ secret: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  });

  it('a tokenize transform deduplicates only among tokens both its application and the caller may reveal: never for an unauthenticated call', async () => {
    const sent: string[] = [];
    const vault = await store.vault({
      proxy: { unsafeFetch: async (_url, init) => (sent.push(new TextDecoder().decode(init?.body as Uint8Array)), new Response('{}', { status: 200 })) },
    });
    const admin = await vault.authenticate(vault.adminKey);
    const reveal = (permissions: ('token:create' | 'token:read' | 'token:use')[]) => [{ priority: 0, container: '/', transform: 'reveal' as const, permissions }];
    const holder = await vault.caller({ type: 'private', permissions: ['token:create', 'token:read'], rules: reveal(['token:create', 'token:read']) });
    const known = await vault.tokens.create(holder, { type: 'card_number', data: '4242424242424242' });
    const transform = { type: 'tokenize' as const, expression: '{ "type": "card_number", "data": "{{ args.pan }}", "deduplicate_token": true }' };
    const inbound = await vault.proxies.create(admin, {
      name: 'intake',
      destination_url: 'https://api.example.com/',
      require_auth: false,
      application: { id: holder.applicationId },
      request_transforms: [transform],
    });
    const call = async (caller: Awaited<ReturnType<typeof vault.caller>> | null, pan: string) => {
      await vault.proxy(caller, { key: inbound.key!, method: 'POST', clientAddress: '198.51.100.4', headers: JSON_TYPE, body: JSON.stringify({ pan }) });
      return (JSON.parse(sent.at(-1)!) as { pan: string }).pan;
    };
    // Whoever holds the key could otherwise confirm a guessed card (and, where the destination
    // echoes, obtain its id), by the answer or by its timing: a duplicate writes nothing.
    const anonymous = await call(null, '4242424242424242');
    expect(anonymous).not.toBe(known.id);
    // A new token each time: its own earlier one is not a duplicate either.
    expect(await call(null, '4242424242424242')).not.toBe(anonymous);
    // An authenticated caller that may reveal the token too gets the duplicate; one that may not, a new token.
    const both = await vault.caller({ type: 'private', permissions: ['proxy:invoke', 'token:read'], rules: reveal(['token:read']) });
    expect(await call(both, '4242424242424242')).toBe(known.id);
    const blind = await vault.caller({ type: 'private', permissions: ['proxy:invoke', 'token:use'], rules: reveal(['token:use']) });
    expect(await call(blind, '4242424242424242')).not.toBe(known.id);
  });

  it("a caller's path cannot climb out of a proxy's base path by a dot segment the destination's server resolves: '..;', encoded slashes, double encoding", async () => {
    const sent: string[] = [];
    const vault = await store.vault({ proxy: { unsafeFetch: async (url) => (sent.push(String(url)), new Response('{}', { status: 200 })) } });
    const admin = await vault.authenticate(vault.adminKey);
    // The author exposes /intake/ only; its transforms may add the backend's credentials.
    const inbound = await vault.proxies.create(admin, { name: 'intake', destination_url: 'https://backend.example.com/intake/', require_auth: false });
    const call = (path: string) => vault.proxy(null, { key: inbound.key!, method: 'GET', path, clientAddress: '198.51.100.4' });
    // Tomcat and Spring take `..;x` for `..`; servers that decode %2F or %5C (or twice) before
    // resolving dot segments see `..` in the others.
    for (const path of ['/..;/admin', '/%2e%2e;jsessionid=1/admin', '/..%2fadmin', '/a/..%5C..%5Cadmin', '/%252e%252e/admin', '/.;/..;/admin']) {
      await expect(call(path), path).rejects.toMatchObject({ code: 'validation_error', errors: { path: ["must not hold '.' or '..' segments"] } });
    }
    expect(sent).toEqual([]);
    // Encoded slashes and matrix parameters that do not climb go on as written.
    await call('/orders;v=2/group%2Fproject/...');
    expect(sent).toEqual(['https://backend.example.com/intake/orders;v=2/group%2Fproject/...']);
  });

  it('a failed call names in its audit entry the tokens its request transforms had already created', async () => {
    const vault = await store.vault({ proxy: { unsafeFetch: async () => Promise.reject(new Error('down')) } });
    const admin = await vault.authenticate(vault.adminKey);
    const tokenizer = await vault.caller({ type: 'private', permissions: ['token:create'], rules: CREATE_ONLY });
    const inbound = await vault.proxies.create(admin, {
      name: 'intake',
      destination_url: 'https://api.example.com/',
      require_auth: false,
      application: { id: tokenizer.applicationId },
      request_transforms: [{ type: 'tokenize', expression: '{ "type": "token", "data": "{{ args.secret }}" }' }],
    });
    await expect(vault.proxy(null, { key: inbound.key!, method: 'POST', clientAddress: '198.51.100.4', headers: JSON_TYPE, body: '{"secret":"s"}' })).rejects.toMatchObject({
      code: 'bad_gateway',
    });
    const [entry] = (await vault.logs.list(admin, { operation: 'proxy:invoke' })).data;
    const created = (await vault.logs.list(admin, { operation: 'token:create' })).data.map((e) => e.resource_id);
    expect(created).toHaveLength(1);
    expect(entry!.outcome).toBe('failure');
    expect(JSON.parse(entry!.detail!)).toMatchObject({ error: 'bad_gateway', created_token_ids: created });
  });
});
