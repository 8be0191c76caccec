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
 * Resolves the URL's host and refuses it (Error, our wording) when any address it resolves to is not
 * public, unless `allowPrivateNetwork`. Shared by reactor `fetch` and webhook delivery: the returned
 * target is what `sendPinned` connects to, so a DNS answer that changes after the check is not used.
 */
export async function resolvePublicTarget(url: URL, allowPrivateNetwork: boolean): Promise<Target> {
  const host = hostOf(url);
  let addresses: { address: string; family: number }[];
  if (isIP(host) !== 0) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await dnsLookup(host, { all: true, verbatim: true });
    } catch {
      throw new Error(`Host '${host}' could not be resolved`);
    }
  }
  const first = addresses[0];
  if (first === undefined) throw new Error(`Host '${host}' could not be resolved`);
  if (!allowPrivateNetwork && addresses.some((a) => isRefusedAddress(a.address))) {
    throw new Error(
      `Host '${host}' is not allowed: it resolves to a loopback, private, link-local or otherwise non-public address; set the reactors.egress.allowPrivateNetwork option to allow it (tokenvault serve --allow-private-network)`,
    );
  }
  return { url, host, address: first.address, family: first.family === 6 ? 6 : 4 };
}
