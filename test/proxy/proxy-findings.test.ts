// Red-team findings on the ephemeral proxy, each failing before its fix: a
// supplied fetch that silently turned the address check off, destination answers that set browser
// security headers on the vault's origin, and a base URL whose trailing slash was dropped.
import { expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { createFetchHandler } from '../../src/http/index.js';
import { destinationUrl } from '../../src/proxy/proxy-destination.js';
import { returnedResponseHeaders } from '../../src/proxy/proxy-headers.js';
import { describeEachStore } from '../support/stores.js';
import { startReceiver } from './receiver.js';

const STRICT = { allowPrivateNetwork: false, allowPorts: new Set([443]) };

describeEachStore('ephemeral proxy findings', (store) => {
  it('a supplied fetch is only taken under its unsafe name; the old name is refused instead of silently skipping the address check', async () => {
    const sent: string[] = [];
    const spy = (async (url: URL | string) => {
      sent.push(String(url));
      return new Response('{"internal":"secret"}', { status: 200 });
    }) as typeof fetch;
    const refused = await store.vault({ proxy: { fetch: spy } as never }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ValidationError);
    expect(JSON.stringify((refused as ValidationError).errors)).toContain('unsafeFetch');
    // Under its own name the URL rules still hold (no IP literal, no plain http, allowed ports).
    const vault = await store.vault({ proxy: { unsafeFetch: spy } });
    const app = await vault.caller({ permissions: ['proxy:invoke'] });
    for (const url of ['https://169.254.169.254/latest/meta-data/', 'http://metadata.google.internal/', 'https://example.com:22/']) {
      await expect(vault.proxy(app, { method: 'GET', url })).rejects.toBeInstanceOf(ValidationError);
    }
    expect(sent).toEqual([]);
  });

  it('a destination cannot set cookies, CORS, CSP, HSTS or clear-site-data on the vault origin; answers are sandboxed and not sniffed', async () => {
    const vault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const handler = createFetchHandler(vault, { headerPrefix: 'BT' });
    const app = await vault.caller({ permissions: ['proxy:invoke'] });
    const receiver = await startReceiver();
    const hostile: Record<string, string> = {
      'content-type': 'text/html',
      'access-control-allow-origin': '*',
      'access-control-allow-credentials': 'true',
      'content-security-policy': "script-src 'unsafe-inline'",
      'content-security-policy-report-only': 'default-src *',
      'clear-site-data': '"*"',
      'strict-transport-security': 'max-age=0',
      'cross-origin-opener-policy': 'unsafe-none',
      'x-frame-options': 'ALLOWALL',
      'x-content-type-options': 'sniff',
      'set-cookie': 'sid=1',
      'permissions-policy': 'camera=*',
      'service-worker-allowed': '/',
      link: '</evil.js>; rel=preload',
      'x-request-id': 'req_1',
    };
    receiver.answer = (_request, res) => {
      res.writeHead(200, hostile);
      res.end('<script>alert(document.cookie)</script>');
    };
    const res = await handler(new Request('http://vault/proxy', { method: 'GET', headers: { 'BT-API-KEY': app.key, 'BT-PROXY-URL': receiver.url } }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html');
    expect(res.headers.get('x-request-id')).toBe('req_1');
    expect(res.headers.get('content-security-policy')).toBe('sandbox');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    for (const name of Object.keys(hostile).filter((n) => !['content-type', 'x-request-id', 'content-security-policy', 'x-content-type-options'].includes(n))) {
      expect(res.headers.get(name), name).toBeNull();
    }
    // In-process answers are filtered the same way.
    const direct = await vault.proxy(app, { method: 'GET', url: receiver.url });
    expect(direct.headers.filter(([n]) => n.startsWith('access-control-') || n === 'clear-site-data')).toEqual([]);
  });

  it('keeps the base URL trailing slash when nothing follows /proxy', async () => {
    expect(destinationUrl('https://api.example.com/v1/', '', '', STRICT).pathname).toBe('/v1/');
    expect(destinationUrl('https://api.example.com/v1/', '', 'a=1', STRICT).href).toBe('https://api.example.com/v1/?a=1');
    expect(destinationUrl('https://api.example.com/v1/', '/x', '', STRICT).pathname).toBe('/v1/x');
    expect(destinationUrl('https://api.example.com/v1', '', '', STRICT).pathname).toBe('/v1');
    expect(returnedResponseHeaders([['Access-Control-Allow-Origin'.toLowerCase(), '*']], null)).toEqual([
      ['content-security-policy', 'sandbox'],
      ['x-content-type-options', 'nosniff'],
    ]);
  });
});
