import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { createEgressFetch, isAllowedHost } from '../../src/sandbox/egress/egress-fetch.js';
import { createQuickJsSandbox } from '../../src/sandbox/quickjs-sandbox.js';
import type { HostFetchRequest } from '../../src/sandbox/sandbox.js';

// DNS answers the tests control; anything else goes to the real resolver.
const fakeDns = new Map<string, { address: string; family: number }[]>();
vi.mock('node:dns/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:dns/promises')>();
  const lookup = (async (host: string, options: unknown) => fakeDns.get(host) ?? real.lookup(host, options as never)) as typeof real.lookup;
  return { ...real, default: { ...real, lookup }, lookup };
});

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let server: http.Server;
let port: number;
const seen: Seen[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      } else if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(5000));
      } else if (req.url === '/hang') {
        // never answers
      } else if (req.url === '/json') {
        res.writeHead(201, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'], 'X-Custom': 'Yes' });
        res.end(JSON.stringify({ received: body === '' ? null : JSON.parse(body), type: req.headers['content-type'] ?? null }));
      } else {
        res.writeHead(200, { 'content-type': 'text/plain' }).end(`hello ${req.method}`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  seen.length = 0;
  fakeDns.clear();
});

const get = (url: string, headers: Record<string, string> = {}): HostFetchRequest => ({ url, method: 'GET', headers, body: null });

describe('createEgressFetch: allowed requests', () => {
  const local = () => createEgressFetch({ allowHosts: ['127.0.0.1', 'localhost'], allowPrivateNetwork: true });

  it('performs a GET and returns status, lower-cased headers and the body', async () => {
    const response = await local()(get(`http://127.0.0.1:${port}/json`, { 'X-Key': 'k1' }));
    expect(response.status).toBe(201);
    expect(response.statusText).toBe('Created');
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.headers['x-custom']).toBe('Yes');
    expect(response.headers['set-cookie']).toBe('a=1, b=2');
    expect(JSON.parse(response.body)).toEqual({ received: null, type: null });
    expect(seen[0]?.headers['x-key']).toBe('k1');
  });

  it('sends a POST body with its length and drops transport headers the reactor tries to set', async () => {
    await local()({
      url: `http://127.0.0.1:${port}/json`,
      method: 'POST',
      headers: { 'content-type': 'application/json', host: 'internal.example', 'transfer-encoding': 'chunked', 'accept-encoding': 'gzip' },
      body: '{"a":1}',
    });
    expect(seen[0]).toMatchObject({ method: 'POST', body: '{"a":1}' });
    expect(seen[0]?.headers).toMatchObject({
      host: `127.0.0.1:${port}`,
      'content-length': '7',
      'content-type': 'application/json',
      'accept-encoding': 'identity',
    });
    expect(seen[0]?.headers['transfer-encoding']).toBeUndefined();
  });

  it('resolves a host name once and connects to the address it checked', async () => {
    fakeDns.set('vault-callback.test', [{ address: '127.0.0.1', family: 4 }]);
    const fetch = createEgressFetch({ allowHosts: ['vault-callback.test'], allowPrivateNetwork: true });
    const response = await fetch(get(`http://vault-callback.test:${port}/`));
    expect(response.body).toBe('hello GET');
    // The real resolver knows nothing of this name: the connection used the checked answer.
    expect(seen[0]?.headers.host).toBe(`vault-callback.test:${port}`);
  });

  it('does not follow redirects', async () => {
    const response = await local()(get(`http://127.0.0.1:${port}/redirect`));
    expect(response.status).toBe(302);
    expect(response.headers.location).toBe('http://169.254.169.254/latest/meta-data/');
    expect(seen).toHaveLength(1);
  });

  it('bounds the response size', async () => {
    const fetch = createEgressFetch({ allowHosts: ['127.0.0.1'], allowPrivateNetwork: true, maxResponseBytes: 1000 });
    await expect(fetch(get(`http://127.0.0.1:${port}/big`))).rejects.toThrow("Response from '127.0.0.1' exceeds the limit of 1000 bytes");
    const roomy = createEgressFetch({ allowHosts: ['127.0.0.1'], allowPrivateNetwork: true, maxResponseBytes: 5000 });
    expect((await roomy(get(`http://127.0.0.1:${port}/big`))).body).toHaveLength(5000);
  });

  it('times out', async () => {
    const fetch = createEgressFetch({ allowHosts: ['127.0.0.1'], allowPrivateNetwork: true, timeoutMs: 100 });
    await expect(fetch(get(`http://127.0.0.1:${port}/hang`))).rejects.toThrow("Request to '127.0.0.1' timed out after 100 ms");
  });

  it('reports a refused connection without a stack', async () => {
    const fetch = createEgressFetch({ allowHosts: ['127.0.0.1'], allowPrivateNetwork: true });
    await expect(fetch(get('http://127.0.0.1:1/'))).rejects.toThrow("Request to '127.0.0.1' failed (ECONNREFUSED)");
  });
});

describe('createEgressFetch: refusals', () => {
  it('refuses a host not in allowHosts, naming the option, before any connection', async () => {
    const fetch = createEgressFetch({ allowHosts: ['api.example.com'], allowPrivateNetwork: true });
    await expect(fetch(get(`http://127.0.0.1:${port}/`))).rejects.toThrow(
      "Host '127.0.0.1' is not allowed: add it to the reactors.egress.allowHosts option (tokenvault serve --allow-host 127.0.0.1)",
    );
    expect(seen).toHaveLength(0);
  });

  it.each([
    'http://127.0.0.1:PORT/',
    'http://localhost:PORT/',
    'http://[::1]:PORT/',
    'http://169.254.169.254/',
    'http://10.0.0.1/',
    'http://0.0.0.0:PORT/',
    'http://2130706433:PORT/',
  ])('refuses %s without allowPrivateNetwork', async (template) => {
    const fetch = createEgressFetch({ allowHosts: ['127.0.0.1', 'localhost', '::1', '169.254.169.254', '10.0.0.1', '0.0.0.0'], allowPrivateNetwork: false });
    await expect(fetch(get(template.replace('PORT', String(port))))).rejects.toThrow(/is not allowed: .*reactors\.egress\.allowPrivateNetwork/);
    expect(seen).toHaveLength(0);
  });

  it('refuses a name when any of its addresses is private (no mixing public and private answers)', async () => {
    fakeDns.set('mixed.test', [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ]);
    const fetch = createEgressFetch({ allowHosts: ['mixed.test'], allowPrivateNetwork: false });
    await expect(fetch(get('http://mixed.test/'))).rejects.toThrow(/allowPrivateNetwork/);
  });

  it('refuses other schemes and methods', async () => {
    const fetch = createEgressFetch({ allowHosts: ['example.com'], allowPrivateNetwork: false });
    await expect(fetch(get('ftp://example.com/file'))).rejects.toThrow('Only http and https URLs are allowed, not ftp');
    await expect(fetch(get('file:///etc/passwd'))).rejects.toThrow('Only http and https URLs are allowed, not file');
    await expect(fetch(get('not a url'))).rejects.toThrow('Invalid URL');
    await expect(fetch({ url: 'https://example.com/', method: 'CONNECT', headers: {}, body: null })).rejects.toThrow("HTTP method 'CONNECT' is not allowed");
  });

  it('refuses a name that does not resolve exactly as one that resolves to a non-public address: the reactor learns nothing of the DNS answer', async () => {
    fakeDns.set('inside.test', [{ address: '10.0.0.7', family: 4 }]);
    fakeDns.set('metadata.test', [{ address: '169.254.169.254', family: 4 }]);
    const fetch = createEgressFetch({ allowHosts: ['*.test', '*.invalid', '127.0.0.1'], allowPrivateNetwork: false });
    const message = async (url: string) =>
      fetch(get(url)).then(
        () => 'fetched',
        (error: Error) => error.message.replace(/'[^']*'/, "'<host>'"),
      );
    const refused =
      "Host '<host>' is not allowed: it must resolve to public addresses only (the reactors.egress.allowPrivateNetwork option, tokenvault serve --allow-private-network, allows others)";
    for (const url of ['https://does-not-exist.invalid/', 'http://inside.test/', 'http://metadata.test/', `http://127.0.0.1:${port}/`]) {
      expect(await message(url), url).toBe(refused);
    }
    expect(seen).toHaveLength(0);
  });

  it('with the private network allowed, a name that does not resolve is reported as such', async () => {
    const fetch = createEgressFetch({ allowHosts: ['does-not-exist.invalid'], allowPrivateNetwork: true });
    await expect(fetch(get('https://does-not-exist.invalid/'))).rejects.toThrow("Host 'does-not-exist.invalid' could not be resolved");
  });

  it('validates its options', () => {
    expect(() => createEgressFetch({ allowHosts: ['bad host'], allowPrivateNetwork: false })).toThrow(ValidationError);
    expect(() => createEgressFetch({ allowHosts: ['https://x.com'], allowPrivateNetwork: false })).toThrow(ValidationError);
    expect(() => createEgressFetch({ allowHosts: ['*'], allowPrivateNetwork: false })).toThrow(ValidationError);
    expect(() => createEgressFetch({ allowHosts: 'x.com' as unknown as string[], allowPrivateNetwork: false })).toThrow(ValidationError);
    expect(() => createEgressFetch({ allowHosts: [], allowPrivateNetwork: false, timeoutMs: 0 })).toThrow(ValidationError);
    expect(() => createEgressFetch({ allowHosts: ['API.Example.COM.', '[::1]'], allowPrivateNetwork: false })).not.toThrow();
  });
});

describe('isAllowedHost', () => {
  it.each([
    ['api.example.com', ['api.example.com'], true],
    ['API.example.com'.toLowerCase(), ['api.example.com'], true],
    ['a.example.com', ['*.example.com'], true],
    ['a.b.example.com', ['*.example.com'], true],
    ['example.com', ['*.example.com'], false],
    ['badexample.com', ['*.example.com'], false],
    ['example.com.evil.net', ['example.com'], false],
    ['api.example.com', [], false],
  ] as const)('%s against %j → %s', (host, patterns, expected) => {
    expect(isAllowedHost(host, patterns)).toBe(expected);
  });
});

describe('createEgressFetch: with a fetchImpl', () => {
  it('applies the same checks, then calls fetchImpl without following redirects', async () => {
    const calls: [string, RequestInit | undefined][] = [];
    const fetchImpl = (async (input: URL | RequestInfo, init?: RequestInit) => {
      calls.push([String(input), init]);
      return new Response('{"ok":true}', { status: 200, headers: { 'Content-Type': 'application/json' } });
    }) as typeof fetch;
    fakeDns.set('api.partner.test', [{ address: '93.184.216.34', family: 4 }]);
    const egress = createEgressFetch({ allowHosts: ['api.partner.test'], allowPrivateNetwork: false, fetchImpl });
    const response = await egress({ url: 'https://api.partner.test/v1', method: 'POST', headers: { 'x-a': '1' }, body: 'b' });
    expect(response).toEqual({ status: 200, statusText: '', headers: { 'content-type': 'application/json' }, body: '{"ok":true}' });
    expect(calls[0]?.[0]).toBe('https://api.partner.test/v1');
    expect(calls[0]?.[1]).toMatchObject({ method: 'POST', body: 'b', redirect: 'manual' });
    await expect(egress(get('https://elsewhere.test/'))).rejects.toThrow(/allowHosts/);
    expect(calls).toHaveLength(1);
  });
});

describe('fetch from a reactor through createEgressFetch', () => {
  it('GETs text and POSTs JSON to an allowed local server', async () => {
    const sandbox = await createQuickJsSandbox({ poolSize: 0, limits: { timeoutMs: 5_000 } });
    const out = await sandbox.run({
      code: `module.exports = async (req) => {
        const base = req.configuration.base;
        const text = await (await fetch(base + '/hello')).text();
        const res = await fetch(base + '/json', { method: 'POST', body: { card: req.args.card } });
        return { text, status: res.status, ok: res.ok, type: res.headers.get('content-type'), json: await res.json() };
      }`,
      req: { args: { card: '4242' }, configuration: { base: `http://127.0.0.1:${port}` } },
      host: { bt: null, fetch: createEgressFetch({ allowHosts: ['127.0.0.1'], allowPrivateNetwork: true }) },
    });
    expect(out.result).toEqual({
      text: 'hello GET',
      status: 201,
      ok: true,
      type: 'application/json',
      json: { received: { card: '4242' }, type: 'application/json' },
    });
  });

  it('rejects a host not in allowHosts inside the reactor', async () => {
    const sandbox = await createQuickJsSandbox({ poolSize: 0 });
    const out = await sandbox.run({
      code: `module.exports = async () => { try { await fetch('http://127.0.0.1:${port}/'); return 'fetched' } catch (e) { return e.message } }`,
      req: { args: null, configuration: {} },
      host: { bt: null, fetch: createEgressFetch({ allowHosts: ['api.example.com'], allowPrivateNetwork: true }) },
    });
    expect(out.result).toBe("Host '127.0.0.1' is not allowed: add it to the reactors.egress.allowHosts option (tokenvault serve --allow-host 127.0.0.1)");
    expect(seen).toHaveLength(0);
  });
});
