// The inbound proxies' rate limit (src/proxy/proxy-rate-limit.ts) and where the client address
// comes from (src/http/client-address.ts): pure, on a manual clock.
import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { TooManyRequestsError } from '../../src/errors/errors.js';
import { clientAddressOf } from '../../src/http/client-address.js';
import { type FetchHandlerOptions, createFetchHandler } from '../../src/http/index.js';
import type { Vault } from '../../src/vault.js';
import { FixedWindowLimiter, addressBucket } from '../../src/proxy/proxy-rate-limit.js';
import { resolveProxyOptions } from '../../src/proxy/proxy-options.js';

describe('inbound proxy rate limit', () => {
  it('allows the limit per window and name, then a 429 with Retry-After until the next window', () => {
    const clock = new ManualClock(0);
    const limiter = new FixedWindowLimiter({ requests: 2, windowMs: 10_000 }, clock);
    limiter.take('a', 'x');
    limiter.take('a', 'x');
    limiter.take('b', 'x');
    clock.advance(2500);
    const error = (() => {
      try {
        limiter.take('a', 'of this proxy');
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(TooManyRequestsError);
    expect((error as TooManyRequestsError).retryAfterSeconds).toBe(8);
    clock.advance(7500);
    expect(() => limiter.take('a', 'x')).not.toThrow();
  });

  it('counts an IPv6 client by its /64 and an IPv4-mapped one as IPv4', () => {
    expect(addressBucket('2001:db8:1:2:aaaa::1')).toBe(addressBucket('2001:0db8:1:2:bbbb:cccc:dddd:eeee'));
    expect(addressBucket('2001:db8:1:3::1')).not.toBe(addressBucket('2001:db8:1:2::1'));
    expect(addressBucket('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(addressBucket(null)).toBe('unknown');
    // A port is not part of the address (some reverse proxies write one in X-Forwarded-For), and
    // the hex form of an IPv4-mapped address is that IPv4 address.
    expect(addressBucket('203.0.113.9:51234')).toBe('203.0.113.9');
    expect(addressBucket('[2001:db8:1:2::1]:443')).toBe(addressBucket('2001:db8:1:2::9'));
    expect(addressBucket('::ffff:cb00:7109')).toBe('203.0.113.9');
  });

  it('sweeps old windows at most once a window: a flood of new addresses is not quadratic work', () => {
    const limiter = new FixedWindowLimiter({ requests: 20, windowMs: 60_000 }, new ManualClock(0));
    // Every sweep iterates the counters' map (and taking a name never does).
    const scans = vi.spyOn(Map.prototype as unknown as Record<symbol, () => unknown>, Symbol.iterator);
    try {
      for (let i = 0; i < 10_100; i++) limiter.take(`2001:db8:${i.toString(16)}::/64`, 'from this address');
      expect(scans.mock.calls.length).toBeLessThanOrEqual(1);
    } finally {
      scans.mockRestore();
    }
  });

  it('takes the adapter address, and X-Forwarded-For only when trusted', () => {
    const request = new Request('http://vault/proxy', { headers: { 'x-forwarded-for': '198.51.100.1, 198.51.100.2' } });
    const info = { clientAddress: '203.0.113.9' };
    expect(clientAddressOf(request, info, false)).toBe('203.0.113.9');
    expect(clientAddressOf(request, info, true)).toBe('198.51.100.2');
    expect(clientAddressOf(new Request('http://vault/proxy'), undefined, false)).toBeNull();
    // The address rides beside the Request, never on it: a Request alone carries none.
    expect(clientAddressOf(request, undefined, false)).toBeNull();
  });

  it('trusts X-Forwarded-For by a count of reverse proxies, or only from listed ones', () => {
    const from = (socket: string | null, forwarded?: string) => ({
      request: new Request('http://vault/proxy', forwarded === undefined ? {} : { headers: { 'x-forwarded-for': forwarded } }),
      info: { clientAddress: socket },
    });
    const addressOf = (from: { request: Request; info: { clientAddress: string | null } }, trust: Parameters<typeof clientAddressOf>[2]) =>
      clientAddressOf(from.request, from.info, trust);
    const chain = from('10.0.0.2', '198.51.100.7, 203.0.113.9, 10.0.0.1');
    // A count: the n-th entry from the right; fewer entries than proxies, the leftmost; none, the socket.
    expect(addressOf(chain, 0)).toBe('10.0.0.2');
    expect(addressOf(chain, 1)).toBe('10.0.0.1');
    expect(addressOf(chain, 2)).toBe('203.0.113.9');
    expect(addressOf(chain, 5)).toBe('198.51.100.7');
    expect(addressOf(from('10.0.0.2'), 2)).toBe('10.0.0.2');
    // A list: entries skipped from the right while they are listed proxies (ports and brackets ignored).
    const proxies = ['10.0.0.0/8', '2001:db8::/32'];
    expect(addressOf(chain, proxies)).toBe('203.0.113.9');
    expect(addressOf(from('::ffff:10.0.0.2', '203.0.113.9:5123, [2001:db8::5]:443'), proxies)).toBe('203.0.113.9:5123');
    expect(addressOf(from('10.0.0.2', '10.0.0.9, 10.0.0.1'), proxies)).toBe('10.0.0.9');
    // A request that did not come through a listed proxy wrote its own header: the socket's address.
    expect(addressOf(from('198.51.100.1', '203.0.113.9'), proxies)).toBe('198.51.100.1');
    expect(addressOf(from(null, '203.0.113.9'), proxies)).toBeNull();
    expect(addressOf(from('10.0.0.2', 'nonsense'), proxies)).toBe('nonsense');
  });

  it('checks trustForwardedFor once, when the handler is made, saying what it takes', () => {
    const make = (trustForwardedFor: unknown) => () => createFetchHandler({} as Vault, { trustForwardedFor } as FetchHandlerOptions);
    expect(make(['10.0.0.0/33'])).toThrow(/trustForwardedFor.*must be an IP address or CIDR range/);
    expect(make(['example.com'])).toThrow(/must be an IP address or CIDR range/);
    expect(make(11)).toThrow(/whole number of reverse proxies from 0 to 10/);
    expect(make([])).toThrow(/at least one reverse proxy address/);
    expect(make('yes')).toThrow(/true or false, a number of reverse proxies/);
  });

  it('checks the limit options once, naming the field', () => {
    expect(() => resolveProxyOptions({ inboundRateLimit: { perKey: { requests: 0, windowMs: 1000 } } })).toThrow(/inboundRateLimit/);
    expect(resolveProxyOptions({}).inboundRateLimit.perAddress).toEqual({ requests: 20, windowMs: 1000 });
  });
});
