// Red team 2 (whole answers): another representation of the same answer passes a response
// transform as a slice or a compressed body would. A caller's `Accept-Charset: utf-16le` to a
// destination that negotiates the charset gets the card in UTF-16: its bytes ("4\0" "2\0" ...)
// are valid UTF-8, so the transform reads them without error and its mask matches nothing.
import { gzipSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { describeEachStore } from '../support/stores.js';
import { type Received, startReceiver } from './receiver.js';

const CARD = '4242424242424242';
const BODY = JSON.stringify({ id: 'card_1', card: CARD });

/** Answers BODY in the charset the request asks for (utf-16le when asked), as a negotiating server does. */
function negotiatingServer(request: Received, res: import('node:http').ServerResponse): void {
  if (/utf-16/i.test(String(request.headers['accept-charset'] ?? ''))) {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-16le' });
    res.end(Buffer.from(BODY, 'utf16le'));
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
  res.end(BODY);
}

describeEachStore('red team 2: a transformed proxy and other representations', (store) => {
  async function setUp() {
    const vault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const handler = createFetchHandler(vault, { headerPrefix: 'BT' });
    const admin = await vault.authenticate(vault.adminKey);
    const receiver = await startReceiver();
    receiver.answer = negotiatingServer;
    const masked = await vault.proxies.create(admin, {
      name: 'masked',
      destination_url: receiver.url,
      require_auth: false,
      response_transforms: [{ type: 'mask', expression: '"card":"(\\d+)"', replacement: '*' }],
    } as never);
    const call = (headers: Record<string, string> = {}) => handler(new Request(`http://vault/proxy/cards/1?bt-proxy-key=${encodeURIComponent(masked.key!)}`, { headers }));
    return { receiver, call };
  }

  it('an anonymous Accept-Charset reaches no destination, and the answer comes back masked', async () => {
    const { receiver, call } = await setUp();
    const res = await call({ 'accept-charset': 'utf-16le' });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.toString('utf16le')).not.toContain(CARD);
    expect(bytes.toString('utf8')).not.toContain(CARD);
    expect(receiver.received[0]!.headers['accept-charset']).toBeUndefined();
    expect(res.status).toBe(200);
  });

  it('a 2xx in UTF-16 or UTF-32 the destination sends anyway is a 502: a transform would read it as UTF-8 and match nothing', async () => {
    const { receiver, call } = await setUp();
    receiver.answer = (_request, res) => {
      res.writeHead(200, { 'content-type': 'application/json; charset="UTF-16LE"' });
      res.end(Buffer.from(BODY, 'utf16le'));
    };
    const res = await call();
    expect(res.status).toBe(502);
    expect(Buffer.from(await res.arrayBuffer()).toString('utf16le')).not.toContain(CARD);
  });

  it('held: an encoding list ending in gzip, an upper-case coding, and a gzip transfer coding reach the caller as no card', async () => {
    const { receiver, call } = await setUp();
    for (const headers of [{ 'content-encoding': 'identity, gzip' }, { 'content-encoding': 'GZIP' }, { 'transfer-encoding': 'gzip, chunked' }]) {
      receiver.answer = (_request, res) => {
        res.writeHead(200, { 'content-type': 'application/json', ...headers });
        res.end(gzipSync(BODY));
      };
      const res = await call();
      expect(res.status).not.toBe(200);
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(bytes.toString('utf8')).not.toContain(CARD);
      expect(bytes.includes(gzipSync(BODY).subarray(10, 30))).toBe(false);
    }
  });
});
