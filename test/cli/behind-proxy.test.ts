// `tokenvault serve --behind-proxy` (docs/production.md, TLS in front): the API answers only the
// listed proxies, only for clients that used https, and believes their X-Forwarded-For; the probes
// answer anyone; TLS in serve and behind a proxy exclude each other. The HTTP edge is the same
// whatever the store, so these run on :memory: (the store-backed paths run in test/http/).
import { describe, expect, it } from 'vitest';
import { ADMIN_KEY, cli } from './helpers.js';

/** Runs serve in-process on :memory: with these flags, hands its URL to `use`, then stops it. */
async function withServer(flags: string[], use: (url: string) => Promise<void>): Promise<void> {
  const served = await cli(['serve', '--port', '0', '--db', ':memory:', '--access-log', 'off', ...flags], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY }, use);
  expect(served.code, served.stderr).toBe(0);
}

const get = async (url: string, path: string, headers: Record<string, string> = {}) => {
  const response = await fetch(url + path, { headers: { 'SVC-API-KEY': ADMIN_KEY, ...headers } });
  return { status: response.status, type: response.headers.get('content-type'), body: (await response.json()) as any };
};

describe('serve --behind-proxy', () => {
  it('from a listed proxy: https clients are served, http or no X-Forwarded-Proto is a 400 saying to use https', async () => {
    await withServer(['--behind-proxy', '127.0.0.1,::1'], async (url) => {
      expect((await get(url, '/applications', { 'x-forwarded-proto': 'https' })).status).toBe(200);
      // A chain: the nearest proxy's value (the last) is the one believed.
      expect((await get(url, '/applications', { 'x-forwarded-proto': 'http, https' })).status).toBe(200);
      const plain = await get(url, '/applications', { 'x-forwarded-proto': 'http' });
      expect(plain).toMatchObject({
        status: 400,
        type: 'application/problem+json',
        body: { status: 400, errors: { 'X-Forwarded-Proto': [expect.stringMatching(/use https:\/\//)] } },
      });
      const none = await get(url, '/applications');
      expect(none.status).toBe(400);
      expect(none.body.errors['X-Forwarded-Proto'][0]).toMatch(/sent no X-Forwarded-Proto/);
      expect((await get(url, '/healthz')).status).toBe(200);
    });
  });

  it('from any other peer: the API is a 403 pointing at the proxy, the probes still answer', async () => {
    await withServer(['--behind-proxy', '10.0.0.0/8'], async (url) => {
      const direct = await get(url, '/applications', { 'x-forwarded-proto': 'https' });
      expect(direct).toMatchObject({
        status: 403,
        type: 'application/problem+json',
        body: { status: 403, detail: expect.stringMatching(/behind a reverse proxy.*through the proxy/) },
      });
      expect(JSON.stringify(direct.body)).not.toContain(ADMIN_KEY);
      expect((await get(url, '/healthz')).status).toBe(200);
      expect((await get(url, '/readyz')).status).toBe(200);
    });
  });

  it("believes the listed proxies' X-Forwarded-For (the per-address limit of inbound proxies counts each client)", async () => {
    await withServer(['--behind-proxy', '127.0.0.1,::1'], async (url) => {
      const statuses = new Set<number>();
      // 60 calls: however the fixed 1 s windows split them, one window holds more than the 20 an address may make.
      for (let i = 0; i < 60; i++) {
        const response = await fetch(`${url}/proxy`, { headers: { 'SVC-PROXY-KEY': 'not-a-proxy-key', 'x-forwarded-for': `198.51.100.${i}`, 'x-forwarded-proto': 'https' } });
        statuses.add(response.status);
        await response.arrayBuffer();
      }
      expect(statuses).toEqual(new Set([401]));
    });
  });

  it('refuses, before anything opens, TLS files beside it and entries that are no address', async () => {
    const both = await cli(['serve', '--db', ':memory:', '--behind-proxy', '127.0.0.1', '--tls-cert', '/nonexistent/c.pem', '--tls-key', '/nonexistent/k.pem']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--behind-proxy .* and --tls-cert\/--tls-key .* exclude each other/);
    const bad = await cli(['serve', '--db', ':memory:', '--behind-proxy', '127.0.0.1,proxy.internal']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--behind-proxy: 'proxy\.internal' must be an IP address or CIDR range/);
    const empty = await cli(['serve', '--db', ':memory:', '--behind-proxy', ' , ']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/--behind-proxy needs the addresses/);
  });
});
