// The inbound proxies' rate limit (src/proxy/proxy-rate-limit.ts) and where the client address
// comes from (src/http/client-address.ts): pure, on a manual clock.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { TooManyRequestsError } from '../../src/errors/errors.js';
import { clientAddressOf, withClientAddress } from '../../src/http/client-address.js';
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
  });

  it('takes the adapter address, and X-Forwarded-For only when trusted', () => {
    const request = withClientAddress(new Request('http://vault/proxy', { headers: { 'x-forwarded-for': '198.51.100.1, 198.51.100.2' } }), '203.0.113.9');
    expect(clientAddressOf(request, false)).toBe('203.0.113.9');
    expect(clientAddressOf(request, true)).toBe('198.51.100.2');
    expect(clientAddressOf(new Request('http://vault/proxy'), false)).toBeNull();
  });

  it('checks the limit options once, naming the field', () => {
    expect(() => resolveProxyOptions({ inboundRateLimit: { perKey: { requests: 0, windowMs: 1000 } } })).toThrow(/inboundRateLimit/);
    expect(resolveProxyOptions({}).inboundRateLimit.perAddress).toEqual({ requests: 20, windowMs: 1000 });
  });
});
