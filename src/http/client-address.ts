/**
 * The network address of the client of a request, which a web Request does not carry: the adapter
 * that made the Request passes it beside it, as the fetch handler's second argument
 * (`handler(request, { clientAddress })`, as Deno's `serve((request, info) => ...)` and hono's
 * `fetch(request, env)` take theirs; the Node adapter gives the socket's). The handler reads it for
 * the rate limit of unauthenticated inbound proxy calls (docs/proxies.md, Inbound).
 */
import { BlockList, isIP } from 'node:net';
import * as v from 'valibot';
import { plainAddress } from '../proxy/proxy-rate-limit.js';

/** What the adapter knows of a request beyond the Request itself: the fetch handler's second argument. */
export interface RequestInfo {
  /** The address of the peer that sent the request (for the Node adapter, the socket's remote address). */
  readonly clientAddress?: string | null | undefined;
}

/** The most reverse proxies `trustForwardedFor` may count: more is a configuration mistake. */
export const MAX_TRUSTED_PROXIES = 10;

/**
 * Which X-Forwarded-For entries to believe (docs/proxies.md, Calling a pre-configured proxy):
 * `false` or `0` none (the adapter's address); `n` the n reverse proxies in front of the vault each
 * append one (the n-th entry from the right is the client's; `true` is 1); a list of the reverse
 * proxies' addresses or CIDR ranges: the entries are read from the right, starting at the adapter's
 * address, for as long as they are one of these, and the first that is not is the client's.
 */
export type TrustForwardedFor = boolean | number | readonly string[];

const ENTRY_MESSAGE = 'must be an IP address or CIDR range (203.0.113.7, 10.0.0.0/8, 2001:db8::/32)';

export const TrustForwardedForSchema = v.union(
  [
    v.boolean(),
    v.pipe(
      v.number(),
      v.integer(`must be a whole number of reverse proxies from 0 to ${MAX_TRUSTED_PROXIES}`),
      v.minValue(0, `must be a whole number of reverse proxies from 0 to ${MAX_TRUSTED_PROXIES}`),
      v.maxValue(MAX_TRUSTED_PROXIES, `must be a whole number of reverse proxies from 0 to ${MAX_TRUSTED_PROXIES}`),
    ),
    v.pipe(
      v.array(
        v.pipe(
          v.string(ENTRY_MESSAGE),
          v.check((entry) => subnetOf(entry) !== null, ENTRY_MESSAGE),
        ),
      ),
      v.minLength(1, 'must name at least one reverse proxy address'),
    ),
  ],
  `must be true or false, a number of reverse proxies (0 to ${MAX_TRUSTED_PROXIES}), or a list of their addresses or CIDR ranges`,
);

/** The client's address under `trust` (see TrustForwardedFor); null when the adapter gave none. */
export function clientAddressOf(request: Request, info: RequestInfo | undefined, trust: TrustForwardedFor): string | null {
  return clientAddressResolver(trust)(request, info);
}

/** `clientAddressOf` with `trust` compiled once (a list becomes a BlockList), for the handler. */
export function clientAddressResolver(trust: TrustForwardedFor): (request: Request, info: RequestInfo | undefined) => string | null {
  if (trust === false || trust === 0) return (_request, info) => adapterAddress(info);
  if (typeof trust === 'boolean' || typeof trust === 'number') {
    const hops = trust === true ? 1 : trust;
    return (request, info) => {
      const entries = forwardedEntries(request);
      if (entries.length === 0) return adapterAddress(info);
      // Fewer entries than proxies: the request came in past the outer ones; the leftmost is all there is.
      return entries[Math.max(0, entries.length - hops)]!;
    };
  }
  const trusted = new BlockList();
  for (const entry of trust) {
    const subnet = subnetOf(entry);
    if (subnet !== null) trusted.addSubnet(subnet.address, subnet.prefix, subnet.family);
  }
  const isTrusted = (address: string): boolean => {
    const plain = plainAddress(address);
    const family = isIP(plain);
    return family !== 0 && trusted.check(plain, family === 4 ? 'ipv4' : 'ipv6');
  };
  return (request, info) => {
    const attached = adapterAddress(info);
    // A request that did not come from one of the reverse proxies wrote its own X-Forwarded-For.
    if (attached === null || !isTrusted(attached)) return attached;
    let client = attached;
    for (const entry of forwardedEntries(request).reverse()) {
      client = entry;
      if (!isTrusted(entry)) break;
    }
    return client;
  };
}

function adapterAddress(info: RequestInfo | undefined): string | null {
  const address = info?.clientAddress;
  return typeof address === 'string' && address !== '' ? address : null;
}

function forwardedEntries(request: Request): string[] {
  const forwarded = request.headers.get('x-forwarded-for');
  return forwarded === null
    ? []
    : forwarded
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part !== '');
}

/** `10.0.0.0/8`, `2001:db8::/32`, or one address (a /32 or /128); null when it is neither. */
function subnetOf(entry: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address = '', prefix, extra] = entry.trim().split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return null;
  const max = family === 4 ? 32 : 128;
  if (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max)) return null;
  return { address, prefix: prefix === undefined ? max : Number(prefix), family: family === 4 ? 'ipv4' : 'ipv6' };
}
