/** Where an outgoing request (reactor `fetch`, egress-fetch.ts; webhook delivery) may connect. */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isRefusedAddress } from './ip-ranges.js';

/** Where a checked request connects. */
export interface Target {
  url: URL;
  host: string;
  address: string;
  family: 4 | 6;
}

/** Parses an absolute http(s) URL; Error (our wording) otherwise. */
export function parseHttpUrl(rawUrl: string): URL {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new Error('Invalid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`Only http and https URLs are allowed, not ${url.protocol.replace(/:$/, '')}`);
  }
  return url;
}

/** The URL's host, lower-case, without IPv6 brackets or a trailing dot. */
export function hostOf(url: URL): string {
  const literal = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return literal.replace(/\.$/, '');
}

/**
 * A destination the address check refused: its host resolves to a non-public address or, while
 * those are refused, does not resolve at all. The message says neither which of the two nor the
 * kind of address: webhook URLs and allow-listed `*.domain` hosts are chosen by tenants, and the
 * difference would let them map how the vault's network resolves internal names.
 * With the private network allowed nothing is refused, and a name that does not
 * resolve is reported as such.
 */
export class RefusedDestinationError extends Error {
  constructor(host: string) {
    super(
      `Host '${host}' is not allowed: it must resolve to public addresses only (the reactors.egress.allowPrivateNetwork option, tokenvault serve --allow-private-network, allows others)`,
    );
  }
}

/**
 * Resolves the URL's host and refuses it (RefusedDestinationError) when it does not resolve or any
 * address it resolves to is not public, unless `allowPrivateNetwork`. Shared by reactor `fetch` and
 * webhook delivery: the returned target is what `sendPinned` connects to, so a DNS answer that
 * changes after the check is not used.
 */
export async function resolvePublicTarget(url: URL, allowPrivateNetwork: boolean): Promise<Target> {
  const host = hostOf(url);
  const unresolved = () => (allowPrivateNetwork ? new Error(`Host '${host}' could not be resolved`) : new RefusedDestinationError(host));
  let addresses: { address: string; family: number }[];
  if (isIP(host) !== 0) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await dnsLookup(host, { all: true, verbatim: true });
    } catch {
      throw unresolved();
    }
  }
  const first = addresses[0];
  if (first === undefined) throw unresolved();
  if (!allowPrivateNetwork && addresses.some((a) => isRefusedAddress(a.address))) throw new RefusedDestinationError(host);
  return { url, host, address: first.address, family: first.family === 6 ? 6 : 4 };
}
