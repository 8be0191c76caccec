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
    const vault = await store.vault({ proxy: { unsafeFetch: async (_url, init) => (sent.push(new TextDecoder().decode(init?.body as Uint8Array)), new Response('{}', { status: 200 })) } });
    const admin = await vault.authenticate(vault.adminKey);
    const tokenizer = await vault.caller({ type: 'private', permissions: ['token:create'], rules: CREATE_ONLY });
    const inbound = await vault.proxies.create(admin, {
      name: 'intake', destination_url: 'https://api.example.com/', require_auth: false, application: { id: tokenizer.applicationId },
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
      vault.proxy(null, { key: inbound.key!, method: 'POST', clientAddress: '198.51.100.4', headers: { ...JSON_TYPE, 'content-encoding': Array(layers).fill('gzip').join(', ') }, body: wrapped(layers) });
    await expect(call(4)).rejects.toMatchObject({
      code: 'unsupported_media_type',
      message: 'The request body names 4 Content-Encodings: the proxy undoes at most 3; send it uncompressed, or compressed once',
    });
    expect(sent).toEqual([]);
    expect((await call(3)).status).toBe(200);
    expect(JSON.parse(sent[0]!)).toEqual({ secret: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  });
});
