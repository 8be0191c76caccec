import { once } from 'node:events';
import { type IncomingMessage, type Server, type ServerResponse, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import type { RequestInfo } from '../../src/http/index.js';
import { type NodeListenerOptions, toNodeListener } from '../../src/http/node.js';
import { ValidationError } from '../../src/errors/errors.js';
import { splitTarget } from '../../src/http/request-target.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { SUITE_START } from '../support/suite-start.js';

let server: Server | undefined;
let vault: TestVault | undefined;
afterEach(async () => {
  await vault?.close();
  vault = undefined;
  if (server) {
    server.closeAllConnections();
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
  }
});

async function start(handler: (request: Request, info: RequestInfo) => Promise<Response>, options?: NodeListenerOptions): Promise<number> {
  server = createServer(toNodeListener(handler, options));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

function send(
  port: number,
  options: { method?: string; path?: string; headers?: Record<string, string | string[]>; body?: string | Buffer[] },
): Promise<{ status: number; headers: IncomingMessage['headers']; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path ?? '/', headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    if (Array.isArray(options.body)) for (const chunk of options.body) req.write(chunk);
    else if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

describe('toNodeListener', () => {
  it("passes the client's address as the handler's second argument, and leaves the Request as fetch made it", async () => {
    let seen: { info: RequestInfo; carried: boolean } | undefined;
    const port = await start(async (request, info) => {
      seen = { info, carried: Object.getOwnPropertySymbols(request).some((symbol) => symbol.description?.startsWith('tokenvault') === true) };
      return new Response('ok');
    });
    expect((await send(port, {})).text).toBe('ok');
    expect(seen?.info.clientAddress).toMatch(/127\.0\.0\.1$/);
    expect(seen?.carried).toBe(false);
  });

  it('converts the request: method, URL with query, headers, streamed body', async () => {
    const port = await start(async (request) => {
      const body = await request.text();
      return Response.json({
        method: request.method,
        url: request.url,
        accept: request.headers.get('x-multi'),
        body,
      });
    });
    const sent = await send(port, {
      method: 'POST',
      path: '/a/b?x=1&x=2',
      headers: { 'x-multi': ['one', 'two'], 'content-type': 'text/plain' },
      body: [Buffer.from('hel'), Buffer.from('lo')],
    });
    expect(sent.status).toBe(200);
    expect(JSON.parse(sent.text)).toEqual({ method: 'POST', url: `http://127.0.0.1:${port}/a/b?x=1&x=2`, accept: 'one, two', body: 'hello' });
  });

  it('a request without a body has a null body; a path starting with // stays a path', async () => {
    const port = await start(async (request) => Response.json({ hasBody: request.body !== null, url: request.url }));
    const sent = await send(port, { method: 'POST', path: '//evil.example/x' });
    const body = JSON.parse(sent.text);
    expect(body.hasBody).toBe(false);
    expect(new URL(body.url).host).toBe(`127.0.0.1:${port}`);
    expect(new URL(body.url).pathname).toBe('//evil.example/x');
  });

  it('streams the response body chunk by chunk, and passes status and headers (several set-cookie)', async () => {
    const port = await start(async () => {
      const encoder = new TextEncoder();
      let n = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (n === 3) return controller.close();
          controller.enqueue(encoder.encode(`chunk${n++};`));
        },
      });
      const headers = new Headers({ 'x-one': '1' });
      headers.append('set-cookie', 'a=1');
      headers.append('set-cookie', 'b=2');
      return new Response(body, { status: 207, headers });
    });
    const sent = await send(port, {});
    expect(sent.status).toBe(207);
    expect(sent.text).toBe('chunk0;chunk1;chunk2;');
    expect(sent.headers['x-one']).toBe('1');
    expect(sent.headers['set-cookie']).toEqual(['a=1', 'b=2']);
  });

  it('aborts the request signal when the client goes away', async () => {
    let aborted!: () => void;
    const sawAbort = new Promise<void>((resolve) => (aborted = resolve));
    let arrived!: () => void;
    const inHandler = new Promise<void>((resolve) => (arrived = resolve));
    const port = await start(
      (request) =>
        new Promise<Response>((resolve) => {
          request.signal.addEventListener('abort', () => {
            aborted();
            resolve(new Response(null, { status: 499 }));
          });
          arrived();
        }),
    );
    const socket = connect(port, '127.0.0.1');
    socket.write('GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await inHandler;
    socket.destroy();
    await sawAbort;
  });

  it('aborts the request signal when the client goes away, with writes at the end of the turn too', async () => {
    let aborted!: () => void;
    const sawAbort = new Promise<void>((resolve) => (aborted = resolve));
    let arrived!: () => void;
    const inHandler = new Promise<void>((resolve) => (arrived = resolve));
    const port = await start(
      (request) =>
        new Promise<Response>((resolve) => {
          request.signal.addEventListener('abort', () => {
            aborted();
            resolve(new Response(null, { status: 499 }));
          });
          arrived();
        }),
      { writeAtTurnEnd: true },
    );
    const socket = connect(port, '127.0.0.1');
    socket.write('GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await inHandler;
    socket.destroy();
    await sawAbort;
  });

  it.each([false, true])('a signal first read after the client went away is already aborted (writeAtTurnEnd %s)', async (writeAtTurnEnd) => {
    let left!: () => void;
    const clientLeft = new Promise<void>((resolve) => (left = resolve));
    let arrived!: () => void;
    const inHandler = new Promise<void>((resolve) => (arrived = resolve));
    let looked!: (aborted: boolean) => void;
    const seen = new Promise<boolean>((resolve) => (looked = resolve));
    const port = await start(
      async (request) => {
        arrived();
        await clientLeft;
        looked(request.signal.aborted);
        return new Response(null, { status: 499 });
      },
      { writeAtTurnEnd },
    );
    // After the listener's own: this response's close is the client leaving.
    server!.on('request', (_req, res) => res.once('close', left));
    const socket = connect(port, '127.0.0.1');
    socket.write('GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await inHandler;
    socket.destroy();
    expect(await seen).toBe(true);
  });

  it("with writes at the end of the turn, a response settled by work at the turn's end (as a group commit settles a creation) is written in that turn, not the next", async () => {
    const order: string[] = [];
    let nextTurn!: () => void;
    const nextTurnRan = new Promise<void>((resolve) => (nextTurn = resolve));
    const listener = toNodeListener(
      async () => {
        await new Promise<void>((resolve) =>
          setImmediate(() => {
            // Queued from the turn's immediates: it runs in the next turn.
            setImmediate(() => {
              order.push('next turn');
              nextTurn();
            });
            resolve();
          }),
        );
        return new Response('done');
      },
      { writeAtTurnEnd: true },
    );
    server = createServer((req, res) => {
      const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
      res.end = ((...args: unknown[]) => {
        order.push('written');
        return end(...args);
      }) as ServerResponse['end'];
      listener(req, res);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const answer = await send((server.address() as AddressInfo).port, { path: '/create' });
    await nextTurnRan;
    expect(answer).toMatchObject({ status: 200, text: 'done' });
    expect(order).toEqual(['written', 'next turn']);
  });

  it('a handler that throws gets an empty 500', async () => {
    const port = await start(async () => {
      throw new Error('boom');
    });
    const sent = await send(port, {});
    expect(sent.status).toBe(500);
    expect(sent.text).toBe('');
  });

  it('a handler answering something that is not a Response gets an empty 500, logged through the logger option, and the process goes on', async () => {
    const logged: { message: string; fields: Record<string, unknown> | undefined }[] = [];
    const logger = { info() {}, warn() {}, error: (message: string, fields?: Record<string, unknown>) => logged.push({ message, fields }) };
    const port = await start(async () => undefined as unknown as Response, { logger });
    const sent = await send(port, {});
    expect(sent.status).toBe(500);
    expect(sent.text).toBe('');
    expect(logged).toEqual([{ message: 'response could not be written', fields: expect.objectContaining({ error: 'TypeError' }) }]);
    // The server still answers.
    expect((await send(port, {})).status).toBe(500);
  });

  it('an unparseable Host header falls back to localhost', async () => {
    const port = await start(async (request) => new Response(new URL(request.url).host));
    const sent = await send(port, { headers: { host: 'bad host:x' } });
    expect(sent.text).toBe('localhost');
  });

  it('answering before reading the whole body closes the connection instead of reading on', async () => {
    const port = await start(async () => new Response('no', { status: 413 }));
    const sent = await send(port, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body: [Buffer.alloc(64 * 1024), Buffer.alloc(64 * 1024)],
    });
    expect(sent.status).toBe(413);
    expect(sent.headers.connection).toBe('close');
  });
});

describe('toNodeListener with createFetchHandler, writing at the end of each turn (as tokenvault serve does)', () => {
  async function startVault(maxBodyBytes = 1024) {
    vault = await createTestVault({ start: SUITE_START });
    const errors: unknown[] = [];
    const key = (await vault.caller({ permissions: ['token:create', 'token:read'] })).key;
    const port = await start(createFetchHandler(vault, { maxBodyBytes, logger: { info() {}, warn() {}, error: (m) => errors.push(m) } }), { writeAtTurnEnd: true });
    return { port, key, errors };
  }

  it('the handler is a plain (Request) => Promise<Response>: no hidden protocol for the adapter', async () => {
    vault = await createTestVault({ start: SUITE_START });
    const handler = createFetchHandler(vault);
    expect(Object.getOwnPropertySymbols(handler)).toEqual([]);
    expect(Object.keys(handler)).toEqual([]);
    const response = await handler(new Request('http://vault/healthz'));
    expect(response).toBeInstanceOf(Response);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('refuses unknown or mistyped options with a ValidationError naming them', () => {
    const handler = async () => new Response(null);
    expect(() => toNodeListener(handler, { writeAtTurnEnd: 'yes' } as never)).toThrow(ValidationError);
    expect(() => toNodeListener(handler, { writeAtTurnEnd: true, batch: 1 } as never)).toThrow(/batch/);
    expect(() => toNodeListener(handler, { logger: console.log } as never)).toThrow(/logger/);
  });

  it('serves a token round trip with content-length, keep-alive and the API headers', async () => {
    const { port, key } = await startVault();
    const body = JSON.stringify({ type: 'token', data: 'node-secret' });
    const created = await send(port, {
      method: 'POST',
      path: '/tokens',
      headers: { 'svc-api-key': key, 'content-type': 'application/json', 'content-length': String(body.length) },
      body,
    });
    expect(created.status).toBe(201);
    expect(created.headers['content-length']).toBe(String(Buffer.byteLength(created.text)));
    expect(created.headers.connection).toBe('keep-alive');
    const id = JSON.parse(created.text).id;
    // An undeclared query parameter is refused by name (the query string reaches the handler).
    const unknown = await send(port, { path: `/tokens/${encodeURIComponent(id)}?unused=1`, headers: { 'SVC-Api-Key': key } });
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.text).errors.unused[0]).toMatch(/is not a query parameter of GET \/tokens\/\{id\}/);
    const got = await send(port, { path: `/tokens/${encodeURIComponent(id)}`, headers: { 'SVC-Api-Key': key } });
    expect(got.status).toBe(200);
    expect(got.headers['cache-control']).toBe('no-store');
    expect(JSON.parse(got.text).id).toBe(id);
  });

  it('reads a chunked body', async () => {
    const { port, key } = await startVault();
    const sent = await send(port, {
      method: 'POST',
      path: '/tokens',
      headers: { 'svc-api-key': key, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body: [Buffer.from('{"type":"tok'), Buffer.from('en","data":"chunked-value"}')],
    });
    expect(sent.status).toBe(201);
  });

  it('413 for a streamed body past the limit, and the connection is closed', async () => {
    const { port, key } = await startVault();
    const sent = await send(port, {
      method: 'POST',
      path: '/tokens',
      headers: { 'svc-api-key': key, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body: [Buffer.alloc(800, 32), Buffer.alloc(800, 32), Buffer.alloc(64 * 1024, 32)],
    });
    expect(sent.status).toBe(413);
    expect(sent.headers['content-type']).toBe('application/problem+json');
    expect(sent.headers.connection).toBe('close');
    const declared = await send(port, {
      method: 'POST',
      path: '/tokens',
      headers: { 'svc-api-key': key, 'content-type': 'application/json', 'content-length': '2000' },
      body: ' '.repeat(2000),
    });
    expect(declared.status).toBe(413);
  });

  it('a client that goes away mid-body breaks nothing: no 5xx logged, the next request is served', async () => {
    const { port, key, errors } = await startVault(1_000_000);
    const socket = connect(port, '127.0.0.1');
    // The server has parsed the head and is reading the body when the client goes away.
    const received = once(server!, 'request');
    socket.write(`POST /tokens HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${key}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"type":`);
    await received;
    socket.destroy();
    const next = await send(port, { path: '/tokens', headers: { 'svc-api-key': key } });
    expect(next.status).toBe(200);
    expect(JSON.parse(next.text).data).toEqual([]);
    expect(errors).toEqual([]);
  });

  /** Creates a token whose metadata repeats its value: a masked read still shows which one it is. */
  function createWithValue(port: number, key: string, value: string) {
    const body = JSON.stringify({ type: 'token', data: value, metadata: { value } });
    return send(port, { method: 'POST', path: '/tokens', headers: { 'svc-api-key': key, 'content-type': 'application/json' }, body });
  }

  // Responses finished in one turn of the event loop are written together at its end.
  it('answers many concurrent requests, each on its own connection with its own response', async () => {
    const { port, key } = await startVault();
    const values = Array.from({ length: 40 }, (_, i) => `concurrent-${i}`);
    const created = await Promise.all(values.map((value) => createWithValue(port, key, value)));
    expect(created.map((r) => r.status)).toEqual(values.map(() => 201));
    const read = await Promise.all(created.map((r) => send(port, { path: `/tokens/${JSON.parse(r.text).id}`, headers: { 'svc-api-key': key } })));
    expect(read.map((r) => JSON.parse(r.text).metadata.value)).toEqual(values);
  });

  it('answers pipelined requests on one connection in order', async () => {
    const { port, key } = await startVault();
    const ids: string[] = [];
    for (const value of ['first', 'second']) ids.push(JSON.parse((await createWithValue(port, key, value)).text).id);
    const socket = connect(port, '127.0.0.1');
    const get = (path: string, last = false) => `GET ${path} HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${key}\r\n${last ? 'Connection: close\r\n' : ''}\r\n`;
    socket.write(get(`/tokens/${ids[1]}`) + get('/tokens/unknown-id') + get(`/tokens/${ids[0]}`, true));
    let reply = '';
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString('utf8')));
    await once(socket, 'end');
    expect([...reply.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1])).toEqual(['200', '404', '200']);
    expect([...reply.matchAll(/"value":"(first|second)"/g)].map((m) => m[1])).toEqual(['second', 'first']);
  });

  it('a client gone before its response is written breaks nothing: the next request is served', async () => {
    const { port, key, errors } = await startVault();
    for (let i = 0; i < 5; i++) {
      const socket = connect(port, '127.0.0.1');
      socket.write(`GET /tokens HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${key}\r\n\r\n`);
      socket.destroy();
    }
    const next = await send(port, { path: '/tokens', headers: { 'svc-api-key': key } });
    expect(next.status).toBe(200);
    expect(errors).toEqual([]);
  });

  it('an absolute-form request target keeps only its path', async () => {
    const { port } = await startVault();
    const socket = connect(port, '127.0.0.1');
    socket.write('GET http://elsewhere.example/healthz HTTP/1.1\r\nHost: elsewhere.example\r\nConnection: close\r\n\r\n');
    let reply = '';
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString('utf8')));
    await once(socket, 'end');
    expect(reply).toMatch(/^HTTP\/1\.1 200/);
    expect(reply).toContain('{"status":"ok"}');
  });
});

describe('splitTarget (the direct path skips the URL parser for plain targets)', () => {
  const viaUrl = (target: string) => {
    const url = new URL(`http://localhost${target}`);
    return { pathname: url.pathname, search: url.search };
  };

  it('gives what new URL gives, for hand-picked targets', () => {
    const targets = [
      '/tokens/abc',
      '/tokens?id=a&id=b',
      '/tokens?',
      '/a?b?c',
      '/tokens/a%2Fb',
      '/tokens/%zz',
      '/tokens/./x',
      '/tokens/../applications',
      '/tokens/%2e%2E/x',
      '/tokens/.',
      '/tokens/..?x=1',
      '/t/a..b',
      "/t/it's?q='x'",
      '/t/a b',
      '/t/"x"',
      '/t/<x>',
      '/t/é',
      '/t#frag',
      '/t/a\\b',
      '/t/{x}',
      '/t/`x`',
      '/t?a=b c',
      '/t?a=%20&b=+',
      '//double',
      '/t/|x|',
      '/t/[x]',
      '/t?x=^',
    ];
    for (const target of targets) expect(splitTarget(target), target).toEqual(viaUrl(target));
  });

  it('gives what new URL gives, for generated targets', () => {
    const alphabet = [...'abcXYZ019-._~!$&\'()*+,;=:@%/?#. "<>`{}|\\^[]é2eE'];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...alphabet), { maxLength: 24 }), (chars) => {
        const target = `/${chars.join('')}`;
        expect(splitTarget(target)).toEqual(viaUrl(target));
      }),
      { numRuns: 5000 },
    );
  });
});
