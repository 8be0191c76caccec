// Any method on any path is answered in our own words, never with a 5xx or an error log line
// (docs/proxies.md, Methods): every route of the route table (src/http/routes/),
// the proxy's paths and the Elements paths, through the fetch handler and through the Node adapter
// (src/http/node-request.ts), where TRACE and CONNECT reach the vault although a web Request
// cannot be made for them. Methods: the standard ones, Node's whole list (TRACE, CONNECT, WebDAV),
// lower-case ones, odd tokens and overlong ones. Both stores: authenticated requests reach the store.
import { once } from 'node:events';
import { METHODS, createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import type { Logger } from '../../src/common/logger.js';
import { createFetchHandler } from '../../src/http/index.js';
import { toNodeListener } from '../../src/http/node.js';
import { ROUTES } from '../../src/http/routes/index.js';
import { describeEachStore } from '../support/stores.js';
import { startReceiver } from '../proxy/receiver.js';

const FUZZ_RUNS = Number(process.env.TOKENVAULT_FUZZ_RUNS ?? 0);
const STANDARD = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT', 'TRACK'];
const token = fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,24}$/);
const method = fc.oneof(
  fc.constantFrom(...STANDARD, ...METHODS),
  fc.constantFrom(...STANDARD, ...METHODS).map((m) => m.toLowerCase()),
  token,
  fc.integer({ min: 64, max: 20_000 }).map((n) => 'X'.repeat(n)),
);

/** Every route's path with its parameters filled in, the proxy's and Elements' paths. */
function paths(proxyKey: string): string[] {
  const routes = [...new Set(ROUTES.map((route) => route.path.replace(/\{[^}]+\}/g, 'tok_x1')))];
  return [
    ...routes,
    '/proxy',
    '/proxy/v1/charges?a=1',
    `/proxy/v1/charges?bt-proxy-key=${encodeURIComponent(proxyKey)}`,
    '/elements/v1/frame?origin=https://shop.example.com',
    '/elements/v1/elements.js',
    '/elements/v1/missing',
    '/elements',
    '/no-such-route',
  ];
}

/** One request over a raw socket: the status, or null when the server closed without answering. */
function rawRequest(port: number, method: string, path: string, headers: Record<string, string>, body: string): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? resolve(status()) : reject(error)));
    socket.on('close', () => resolve(status()));
    const status = () => {
      const match = /^HTTP\/1\.1 (\d{3})/.exec(Buffer.concat(chunks).toString('latin1'));
      return match === null ? null : Number(match[1]);
    };
    const head = Object.entries({ host: 'vault.test', connection: 'close', 'content-length': String(Buffer.byteLength(body)), ...headers }).map(([n, v]) => `${n}: ${v}\r\n`);
    socket.end(`${method} ${path} HTTP/1.1\r\n${head.join('')}\r\n${body}`);
  });
}

describeEachStore('methods on every path (property)', (store) => {
  const runs = FUZZ_RUNS > 0 ? FUZZ_RUNS : store.name === 'sqlite' ? 40 : 20;
  it(`never answers a 5xx nor logs an error, over ${runs} draws on every path`, { timeout: 300_000 }, async () => {
    const errors: string[] = [];
    const logger: Logger = { info: () => undefined, warn: () => undefined, error: (message, fields) => errors.push(`${message} ${JSON.stringify(fields ?? {})}`) };
    const vault = await store.vault({ logger, reactors: { egress: { allowPrivateNetwork: true } } });
    const receiver = await startReceiver();
    const admin = await vault.authenticate(vault.adminKey);
    const inbound = await vault.proxies.create(admin, { name: 'inbound', destination_url: receiver.url, require_auth: false });
    const app = await vault.caller({ permissions: ['proxy:invoke', 'token:read'] });
    const handler = createFetchHandler(vault, { headerPrefix: 'BT', logger });
    const server = createServer(toNodeListener(handler));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    const all = paths(inbound.key!);
    const credentials: Record<string, Record<string, string>> = {
      none: {},
      admin: { 'BT-API-KEY': vault.adminKey },
      app: { 'BT-API-KEY': app.key, 'BT-PROXY-URL': receiver.url },
      wrong: { 'BT-API-KEY': 'key_nope' },
    };
    let requests = 0;
    try {
      await fc.assert(
        fc.asyncProperty(method, fc.constantFrom(...Object.keys(credentials)), fc.option(fc.constantFrom('{}', 'x', '{"a":1}')), fc.boolean(), async (m, who, body, viaNode) => {
          errors.length = 0;
          for (const path of all) {
            const headers = { ...credentials[who]!, ...(body === null ? {} : { 'content-type': 'application/json' }) };
            const label = `${m.slice(0, 40)} ${path} as ${who} ${viaNode ? 'through Node' : 'through fetch'}`;
            requests++;
            let status: number | null;
            if (viaNode) status = await rawRequest(port, m, path, headers, body ?? '');
            else {
              let request: Request;
              try {
                request = new Request(`http://vault.test${path}`, { method: m, headers, ...(body !== null && !['GET', 'HEAD'].includes(m.toUpperCase()) ? { body } : {}) });
              } catch {
                continue; // A method (TRACE, CONNECT) a fetch runtime cannot deliver: the Node adapter is its way in.
              }
              const response = await handler(request);
              await response.arrayBuffer();
              status = response.status;
            }
            // Null: Node closed the connection itself (CONNECT, with no 'connect' listener).
            if (status !== null) expect(status, label).toBeLessThan(500);
            expect(errors, label).toEqual([]);
          }
        }),
        {
          numRuns: runs,
          ...(FUZZ_RUNS > 0 ? {} : { seed: 20261202 }),
          examples: [
            ['TRACE', 'none', null, true],
            ['TRACE', 'none', 'x', true],
            ['TRACE', 'app', '{}', true],
            ['CONNECT', 'admin', null, true],
            ['PROPFIND', 'admin', '{}', true],
            ['patch', 'admin', '{}', false],
            ['FOO', 'app', 'x', false],
            ['X'.repeat(10_000), 'none', 'x', false],
          ],
        },
      );
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    console.info(`methods property on ${store.name}: ${requests} requests`);
  });
});
