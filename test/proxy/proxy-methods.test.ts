// A method the proxy does not carry (docs/proxies.md, Methods): a 405 with Allow
// before any body is read, counted by the inbound rate limit, and no error log line. TRACE and
// CONNECT cannot be made as a web Request, so they come through the Node adapter, as from a client.
import { once } from 'node:events';
import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { expect, it } from 'vitest';
import type { Logger } from '../../src/common/logger.js';
import { createFetchHandler } from '../../src/http/index.js';
import { toNodeListener } from '../../src/http/node.js';
import { describeEachStore } from '../support/stores.js';
import { startReceiver } from './receiver.js';

/** Sends `head` (a request without its body) and resolves with the answer's head as soon as it comes. */
function answerHead(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      socket.destroy();
      resolve(text.slice(0, end));
    });
    socket.on('error', reject);
    socket.write(head);
  });
}

describeEachStore('methods the proxy does not carry', (store) => {
  it('TRACE is a 405 with Allow before its body is read, counted by the rate limit, logged as nothing', async () => {
    const errors: string[] = [];
    const logger: Logger = { info: () => undefined, warn: () => undefined, error: (message) => errors.push(message) };
    const limit = { requests: 2, windowMs: 60_000 };
    const vault = await store.vault({ logger, reactors: { egress: { allowPrivateNetwork: true } }, proxy: { inboundRateLimit: { perKey: limit, perAddress: limit } } });
    const receiver = await startReceiver();
    const admin = await vault.authenticate(vault.adminKey);
    const inbound = await vault.proxies.create(admin, { name: 'inbound', destination_url: receiver.url, require_auth: false });
    const server = createServer(toNodeListener(createFetchHandler(vault, { headerPrefix: 'BT', logger })));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    try {
      // A body of 1 MB is declared and never sent: the answer comes without waiting for it.
      const trace = () => answerHead(port, `TRACE /proxy/x?bt-proxy-key=${encodeURIComponent(inbound.key!)} HTTP/1.1\r\nhost: vault\r\ncontent-length: 1000000\r\n\r\n`);
      const first = await trace();
      expect(first).toMatch(/^HTTP\/1\.1 405 /);
      expect(first.toLowerCase()).toContain('allow: get, head, post, put, patch, delete, options');
      expect((await trace()).slice(0, 12)).toBe('HTTP/1.1 405');
      // The third call from this address in the window is over the limit, whatever its method.
      expect((await trace()).slice(0, 12)).toBe('HTTP/1.1 429');
      // With an API key (an ephemeral call), also a 405 without reading the body.
      const app = await vault.caller({ permissions: ['proxy:invoke'] });
      const withKey = await answerHead(port, `TRACE /proxy HTTP/1.1\r\nhost: vault\r\nbt-api-key: ${app.key}\r\nbt-proxy-url: ${receiver.url}\r\ncontent-length: 1000000\r\n\r\n`);
      expect(withKey).toMatch(/^HTTP\/1\.1 405 /);
      expect(receiver.received).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('through the fetch handler, an odd method is a 405 in the proxy_error convention', async () => {
    const vault = await store.vault();
    const handler = createFetchHandler(vault, { headerPrefix: 'BT' });
    const admin = await vault.authenticate(vault.adminKey);
    const inbound = await vault.proxies.create(admin, { name: 'inbound', destination_url: 'https://api.example.com/', require_auth: false });
    const res = await handler(new Request(`http://vault/proxy?bt-proxy-key=${encodeURIComponent(inbound.key!)}`, { method: 'PROPFIND', body: 'x' }));
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
    expect(((await res.json()) as { proxy_error: { detail: string } }).proxy_error.detail).toMatch(/not allowed.*GET, HEAD/);
    // In-process, the method is a field of the request: a 400 naming it.
    await expect(vault.proxy(null, { method: 'TRACE', key: inbound.key!, clientAddress: '203.0.113.5' })).rejects.toMatchObject({
      code: 'validation_error',
      errors: { method: [expect.stringContaining('GET')] },
    });
  });
});
