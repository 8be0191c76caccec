// A proxy with response transforms passes on whole answers only
// (src/proxy/whole-answer.ts, docs/proxies.md, Whole answers): an anonymous caller's Range reaches no
// destination, a 206 or a compressed body is a 502, and no hash of the untransformed body comes
// back. A real local destination that honours Range and conditional requests; both stores.
import { gzipSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { describeEachStore } from '../support/stores.js';
import { type Received, startReceiver } from './receiver.js';

const CARD = '4242424242424242';
const BODY = JSON.stringify({ id: 'card_1', card: CARD });
const ETAG = '"sha-of-the-unmasked-body"';

/** Answers BODY as an ordinary server does: a Range gets a 206 slice, a matching If-None-Match a 304. */
function honouringServer(request: Received, res: import('node:http').ServerResponse): void {
  const range = /^bytes=(\d+)-(\d+)$/.exec(String(request.headers.range ?? ''));
  const common = { 'content-type': 'application/json', etag: ETAG, digest: 'sha-256=abc', 'accept-ranges': 'bytes' };
  if (request.headers['if-none-match'] === ETAG) {
    res.writeHead(304, common);
    res.end();
    return;
  }
  if (range !== null) {
    const [from, to] = [Number(range[1]), Number(range[2])];
    res.writeHead(206, { ...common, 'content-range': `bytes ${from}-${to}/${BODY.length}` });
    res.end(BODY.slice(from, to + 1));
    return;
  }
  res.writeHead(200, common);
  res.end(BODY);
}

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

describeEachStore('a transformed proxy takes whole answers only', (store) => {
  async function setUp() {
    const vault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const handler = createFetchHandler(vault, { headerPrefix: 'BT' });
    const admin = await vault.authenticate(vault.adminKey);
    const receiver = await startReceiver();
    receiver.answer = honouringServer;
    const masked = await vault.proxies.create(admin, {
      name: 'masked',
      destination_url: receiver.url,
      require_auth: false,
      response_transforms: [{ type: 'mask', expression: '"card":"(\\d+)"', replacement: '*' }],
    } as never);
    const plain = await vault.proxies.create(admin, { name: 'plain', destination_url: receiver.url, require_auth: false });
    const call = (key: string, headers: Record<string, string> = {}, method = 'GET') =>
      handler(new Request(`http://vault/proxy/cards/1?bt-proxy-key=${encodeURIComponent(key)}`, { method, headers }));
    return { receiver, call, maskedKey: masked.key!, plainKey: plain.key! };
  }

  it('an anonymous Range slice never reaches the destination: the whole answer comes back masked', async () => {
    const { receiver, call, maskedKey } = await setUp();
    for (let i = 0; i < BODY.length; i += 8) {
      const res = await call(maskedKey, { range: `bytes=${i}-${i + 7}`, 'if-range': ETAG });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toBe(BODY.replace(CARD, '*'.repeat(CARD.length)));
      // The validators and digests of the unmasked body would let the caller check guesses offline.
      expect([res.headers.get('etag'), res.headers.get('digest')]).toEqual([null, null]);
    }
    expect(receiver.received.map((r) => [r.headers.range, r.headers['if-range']])).toEqual(receiver.received.map(() => [undefined, undefined]));
  });

  it('a conditional request is not forwarded (no 304 standing for a body the caller cached elsewhere)', async () => {
    const { receiver, call, maskedKey } = await setUp();
    const res = await call(maskedKey, { 'if-none-match': ETAG, 'if-modified-since': 'Tue, 01 Dec 2026 00:00:00 GMT' });
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain(CARD);
    expect([receiver.received[0]!.headers['if-none-match'], receiver.received[0]!.headers['if-modified-since']]).toEqual([undefined, undefined]);
  });

  it('a 206 the destination sends anyway is refused with a 502, and so is a compressed body', async () => {
    const { receiver, call, maskedKey } = await setUp();
    receiver.answer = (_request, res) => {
      res.writeHead(206, { 'content-type': 'application/json', 'content-range': `bytes 20-27/${BODY.length}` });
      res.end(BODY.slice(20, 28));
    };
    const partial = await call(maskedKey);
    expect(partial.status).toBe(502);
    const partialText = await partial.text();
    expect(partialText).toContain('proxy_error');
    expect(partialText).not.toContain(CARD.slice(0, 8));
    receiver.answer = (_request, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync(BODY));
    };
    const compressed = await call(maskedKey);
    expect(compressed.status).toBe(502);
    expect(await compressed.text()).toContain('proxy_error');
    expect(receiver.received.every((r) => r.headers['accept-encoding'] === undefined)).toBe(true);
  });

  it('a HEAD answers no body and no hash of it', async () => {
    const { call, maskedKey } = await setUp();
    const res = await call(maskedKey, {}, 'HEAD');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
    expect(res.headers.get('etag')).toBeNull();
  });

  it('a proxy without response transforms forwards Range, and the 206 comes back as it is', async () => {
    const { receiver, call, plainKey } = await setUp();
    const res = await call(plainKey, { range: 'bytes=0-6' });
    expect(res.status).toBe(206);
    expect(await res.text()).toBe(BODY.slice(0, 7));
    expect(res.headers.get('etag')).toBe(ETAG);
    expect(receiver.received[0]!.headers.range).toBe('bytes=0-6');
  });

  // Another representation of the same answer passes a transform as a slice or a compressed body
  // would: UTF-16 text of digits is valid UTF-8, so a transform reads it without error and its mask
  // matches nothing.
  it('an anonymous Accept-Charset reaches no destination, and the answer comes back masked', async () => {
    const { receiver, call, maskedKey } = await setUp();
    receiver.answer = negotiatingServer;
    const res = await call(maskedKey, { 'accept-charset': 'utf-16le' });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.toString('utf16le')).not.toContain(CARD);
    expect(bytes.toString('utf8')).not.toContain(CARD);
    expect(receiver.received[0]!.headers['accept-charset']).toBeUndefined();
    expect(res.status).toBe(200);
  });

  it('a 2xx in UTF-16 or UTF-32 the destination sends anyway is a 502: a transform would read it as UTF-8 and match nothing', async () => {
    const { receiver, call, maskedKey } = await setUp();
    receiver.answer = (_request, res) => {
      res.writeHead(200, { 'content-type': 'application/json; charset="UTF-16LE"' });
      res.end(Buffer.from(BODY, 'utf16le'));
    };
    const res = await call(maskedKey);
    expect(res.status).toBe(502);
    expect(Buffer.from(await res.arrayBuffer()).toString('utf16le')).not.toContain(CARD);
  });

  it('held: an encoding list ending in gzip, an upper-case coding, and a gzip transfer coding reach the caller as no card', async () => {
    const { receiver, call, maskedKey } = await setUp();
    for (const headers of [{ 'content-encoding': 'identity, gzip' }, { 'content-encoding': 'GZIP' }, { 'transfer-encoding': 'gzip, chunked' }]) {
      receiver.answer = (_request, res) => {
        res.writeHead(200, { 'content-type': 'application/json', ...headers });
        res.end(gzipSync(BODY));
      };
      const res = await call(maskedKey);
      expect(res.status).not.toBe(200);
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(bytes.toString('utf8')).not.toContain(CARD);
      expect(bytes.includes(gzipSync(BODY).subarray(10, 30))).toBe(false);
    }
  });
});
