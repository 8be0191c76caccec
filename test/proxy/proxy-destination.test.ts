// The destination rules of the ephemeral proxy (docs/proxies.md) as pure functions, and the pinned
// connection: a request goes to the address that was checked, whatever the name resolves to later.
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { destinationUrl, resolveDestination } from '../../src/proxy/proxy-destination.js';
import { forwardedRequestHeaders, returnedResponseHeaders } from '../../src/proxy/proxy-headers.js';
import { sendToDestination } from '../../src/proxy/proxy-transport.js';
import { RefusedDestinationError } from '../../src/sandbox/egress/egress-target.js';
import { startReceiver } from './receiver.js';

const STRICT = { allowPrivateNetwork: false, allowPorts: new Set([443]) };
const DEV = { allowPrivateNetwork: true, allowPorts: new Set([443]) };

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return JSON.stringify(error.errors);
    throw error;
  }
  return 'accepted';
}

describe('proxy destination rules', () => {
  it('builds the URL from the base, the path after /proxy and both queries', () => {
    expect(destinationUrl('https://api.example.com/v1/', '/charges', '?b=2', STRICT).href).toBe('https://api.example.com/v1/charges?b=2');
    expect(destinationUrl('https://api.example.com/v1?a=1#frag', '/x', 'b=2', STRICT).href).toBe('https://api.example.com/v1/x?a=1&b=2');
    expect(destinationUrl('https://api.example.com', '', '', STRICT).href).toBe('https://api.example.com/');
  });

  it('refuses what is not https to a DNS name, credentials, dot segments and missing URLs', () => {
    const cases: [string | null, string, string][] = [
      [null, '', 'required'],
      ['not a url', '', 'absolute'],
      ['http://api.example.com', '', 'https'],
      ['https://203.0.113.9/', '', 'DNS name'],
      ['https://[::1]/', '', 'DNS name'],
      ['https://intranet/', '', 'fully qualified'],
      ['https://user:pw@api.example.com/', '', 'credentials'],
      ['https://api.example.com', '/a/../../admin', '..'],
      ['https://api.example.com', '/a/%2E%2E/admin', '..'],
      ['https://api.example.com', '/a\\b', 'backslash'],
    ];
    for (const [base, path, words] of cases)
      expect(
        refusal(() => destinationUrl(base, path, '', STRICT)),
        String(base),
      ).toContain(words);
    // The development switch admits plain http and loopback literals (a local receiver).
    expect(refusal(() => destinationUrl('http://127.0.0.1:8080', '', '', DEV))).toBe('accepted');
    expect(refusal(() => destinationUrl('http://10.1.2.3', '', '', DEV))).toContain('DNS name');
  });

  it('refuses a name that resolves to loopback, and ports off the list, unless the development switch allows them', async () => {
    await expect(resolveDestination(new URL('https://localhost/'), STRICT)).rejects.toBeInstanceOf(RefusedDestinationError);
    await expect(resolveDestination(new URL('https://no-such-host.invalid/'), STRICT)).rejects.toBeInstanceOf(RefusedDestinationError);
    expect((await resolveDestination(new URL('http://localhost:9/'), DEV)).address).toBe('127.0.0.1');
    await expect(resolveDestination(new URL('https://localhost:8443/'), { ...STRICT, allowPrivateNetwork: false })).rejects.toThrow();
  });

  it('connects to the checked address, not to what the name resolves to now (no rebinding)', async () => {
    const receiver = await startReceiver('127.0.0.1');
    const url = new URL(`http://rebound.invalid:${receiver.port}/pinned`);
    const answer = await sendToDestination(
      { url, host: 'rebound.invalid', address: '127.0.0.1', family: 4 },
      { method: 'GET', headers: {}, body: null },
      { timeoutMs: 5000, maxResponseBytes: 1000, setTimer: () => () => undefined },
    );
    expect(answer.status).toBe(201);
    expect(receiver.received[0]).toMatchObject({ url: '/pinned', headers: { host: `rebound.invalid:${receiver.port}` } });
  });

  it('forwards no hop-by-hop header nor a claimed client address, and returns none, nor set-cookie, nor the vault prefix; answers are sandboxed', () => {
    const out = forwardedRequestHeaders([
      ['Connection', 'close, X-Secret-Hop'],
      ['X-Secret-Hop', '1'],
      ['Transfer-Encoding', 'chunked'],
      ['Host', 'evil'],
      ['Proxy-Authorization', 'x'],
      ['Authorization', 'Bearer a'],
      ['X-Multi', 'a'],
      ['x-multi', 'b'],
      ['X-Forwarded-For', '10.0.0.1'],
      ['x-forwarded-host', 'admin.internal'],
      ['Forwarded', 'for=10.0.0.1'],
      ['X-Real-IP', '10.0.0.1'],
      ['True-Client-IP', '10.0.0.1'],
    ]);
    expect({ ...out }).toEqual({ authorization: 'Bearer a', 'x-multi': 'a, b' });
    expect(
      returnedResponseHeaders(
        [
          ['connection', 'keep-alive'],
          ['set-cookie', 'a=1'],
          ['bt-x', '1'],
          ['x-ok', '1'],
          ['content-type', 'text/plain'],
        ],
        'bt-',
      ),
    ).toEqual([
      ['x-ok', '1'],
      ['content-type', 'text/plain'],
      ['content-security-policy', 'sandbox'],
      ['x-content-type-options', 'nosniff'],
    ]);
  });
});
