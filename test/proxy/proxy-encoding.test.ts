// Compressed request bodies through the proxy (docs/proxies.md, Compressed request bodies), on both
// stores, over HTTP to a local receiver: what reads the body (expressions, request transforms)
// reads it decompressed, within the body limit, and the destination gets it uncompressed; what
// cannot be read is refused in the vault's words and nothing is sent.
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import type { AccessRule } from '../../src/permissions/permissions.js';
import { describeEachStore } from '../support/stores.js';
import { startReceiver } from './receiver.js';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const REVEAL: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:use'] }];
const MAX_BODY = 4096;

describeEachStore('compressed proxy request bodies', (store) => {
  async function setup() {
    const vault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const handler = createFetchHandler(vault, { headerPrefix: 'BT', maxBodyBytes: MAX_BODY });
    const app = await vault.caller({ permissions: ['token:create', 'token:use', 'proxy:invoke'], rules: REVEAL });
    const card = await vault.tokens.create(app, { type: 'card', data: CARD });
    const receiver = await startReceiver();
    const call = (headers: Record<string, string>, body: Uint8Array, path = '/proxy/charges') =>
      handler(new Request(`http://vault${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: body as BodyInit }));
    return { vault, app, card, receiver, call };
  }

  it('decompresses gzip, deflate (zlib or raw) and br before detokenizing and transforming, and forwards the result uncompressed', async () => {
    const { vault, app, card, receiver, call } = await setup();
    const json = Buffer.from(JSON.stringify({ number: `{{ ${card.id} | json: '$.number' }}` }));
    const encoded: [string, Uint8Array][] = [
      ['gzip', gzipSync(json)],
      ['deflate', deflateSync(json)],
      ['deflate', deflateRawSync(json)],
      ['br', brotliCompressSync(json)],
      ['gzip, br', brotliCompressSync(gzipSync(json))],
    ];
    for (const [coding, body] of encoded) {
      const response = await call({ 'BT-API-KEY': app.key, 'BT-PROXY-URL': receiver.url, 'content-encoding': coding }, body);
      expect(response.status, coding).toBe(201);
      const got = receiver.received.at(-1)!;
      expect(JSON.parse(got.body), coding).toEqual({ number: CARD.number });
      expect(got.headers['content-encoding'], coding).toBeUndefined();
      expect(Number(got.headers['content-length']), coding).toBe(Buffer.byteLength(got.body));
    }
    // An inbound proxy's tokenize transform reads the decompressed JSON: the destination gets a token id.
    const admin = await vault.authenticate(vault.adminKey);
    const tokenizer = await vault.caller({
      type: 'private',
      permissions: ['token:create'],
      rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create'] }],
    });
    const inbound = await vault.proxies.create(admin, {
      name: 'intake',
      destination_url: receiver.url,
      require_auth: false,
      application: { id: tokenizer.applicationId },
      request_transforms: [{ type: 'tokenize', expression: '{ "type": "card", "data": "{{ args.card }}" }' }],
    });
    expect((await call({ 'BT-PROXY-KEY': inbound.key!, 'content-encoding': 'gzip' }, gzipSync(JSON.stringify({ card: CARD })))).status).toBe(201);
    const forwarded = JSON.parse(receiver.received.at(-1)!.body) as { card: string };
    expect(forwarded.card).toMatch(/^[0-9a-f-]{36}$/);
    // One with nothing that reads its body (no API key, no transform) goes on as it was sent.
    const passing = await vault.proxies.create(admin, { name: 'passing', destination_url: receiver.url, require_auth: false });
    const zipped = gzipSync('{"opaque":true}');
    expect((await call({ 'BT-PROXY-KEY': passing.key!, 'content-encoding': 'gzip' }, zipped)).status).toBe(201);
    expect(receiver.received.at(-1)!.headers['content-encoding']).toBe('gzip');
    expect(Number(receiver.received.at(-1)!.headers['content-length'])).toBe(zipped.byteLength);
  });

  it('refuses a bomb past the body limit (413), an unknown encoding (415) and corrupt data (400), sending nothing', async () => {
    const { app, card, receiver, call } = await setup();
    const headers = (coding: string) => ({ 'BT-API-KEY': app.key, 'BT-PROXY-URL': receiver.url, 'content-encoding': coding });
    // About 2 KiB on the wire, 2 MiB decompressed: refused once it passes the 4 KiB limit.
    const bomb = gzipSync(Buffer.concat([Buffer.from(`{"n":"{{ ${card.id} }}","pad":"`), Buffer.alloc(2 << 20, 0x41), Buffer.from('"}')]));
    expect(bomb.byteLength).toBeLessThan(MAX_BODY);
    const tooLarge = await call(headers('gzip'), bomb);
    expect(tooLarge.status).toBe(413);
    expect(((await tooLarge.json()) as { proxy_error: { detail: string } }).proxy_error.detail).toBe(
      `The request body decompresses (Content-Encoding gzip) to more than the limit of ${MAX_BODY} bytes: send a smaller body`,
    );
    const unknown = await call(headers('compress'), Buffer.from('x'));
    expect(unknown.status).toBe(415);
    expect(((await unknown.json()) as { proxy_error: { detail: string } }).proxy_error.detail).toBe(
      "The request body's Content-Encoding 'compress' is not one the proxy can read: send the body uncompressed, or as gzip, deflate or br",
    );
    const corrupt = await call(headers('gzip'), Buffer.from('not gzip at all'));
    expect(corrupt.status).toBe(400);
    expect(((await corrupt.json()) as { proxy_error: { errors: Record<string, string[]> } }).proxy_error.errors).toEqual({
      body: ['is not valid gzip data (its Content-Encoding says gzip): send it uncompressed or encoded as it says'],
    });
    expect(receiver.received).toEqual([]);
  });
});
