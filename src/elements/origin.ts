import { isIPv6 } from 'node:net';

/** Longest origin accepted: a DNS name is at most 253 characters; the rest is scheme and port. */
export const MAX_ORIGIN_LENGTH = 270;

/** `scheme://host[:port]` and nothing else; each part is checked below. Case is folded first. */
const ORIGIN = /^(https?):\/\/(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::([0-9]+))?$/;
/** One DNS label: letters, digits and inner hyphens, 1 to 63 characters. */
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** One IPv4 part written as a URL serializes it: decimal, without leading zeros. */
const OCTET = /^(?:0|[1-9][0-9]{0,2})$/;
const DEFAULT_PORT = { http: '80', https: '443' } as const;

/** How a refused origin is explained (an application's field, the frame's parameter). */
export const ORIGIN_GRAMMAR =
  'http:// or https://, a host (a DNS name, an IPv4 address or a bracketed IPv6 address) and an optional port 1-65535, nothing else: no path, trailing slash, query, credentials or wildcard';

/**
 * A page origin as browsers serialize it (`https://shop.example`, `http://127.0.0.1:3000`,
 * `http://[::1]:8080`), normalized; null when the value is not one. This is the one check of an
 * origin the vault is given (docs/elements.md, "Origins"): an application's `allowed_origins`, and
 * the frame page's `origin` parameter, which is written into the frame's `frame-ancestors`.
 *
 * The grammar: scheme `http` or `https`, `://`, a host, and an optional port 1-65535; nothing else
 * (no path, trailing slash, query, fragment, credentials or wildcard). The host is a DNS name
 * (ASCII labels of letters, digits and inner hyphens, at most 253 characters, no trailing dot; an
 * internationalized name in its `xn--` form; ASCII only), an IPv4 address in dotted decimal, or an IPv6
 * address in brackets. Scheme and host are lower-cased, a default port (80, 443) dropped, and an
 * IPv6 address written as a URL writes it. A value the URL parser would read otherwise than it is
 * written (`0x7f.1`, `010.0.0.1`, `%2e`) is refused rather than rewritten, so what is accepted is
 * what a browser sends as its `Origin`, and no character of it (`;`, `,`, a space, a quote) can end
 * a header value or a policy directive.
 */
export function parseOrigin(value: string): string | null {
  if (typeof value !== 'string' || value.length > MAX_ORIGIN_LENGTH) return null;
  // ASCII only, checked before case is folded: some other characters lower-case to ASCII letters.
  if (!/^[\x21-\x7e]+$/.test(value)) return null;
  const match = ORIGIN.exec(value.toLowerCase());
  if (match === null) return null;
  const scheme = match[1] as 'http' | 'https';
  const host = match[2]!;
  const port = match[3];
  if (!validHost(host)) return null;
  if (port !== undefined && !(/^[1-9][0-9]{0,4}$/.test(port) && Number(port) <= 65535)) return null;
  const written = `${scheme}://${host}${port === undefined || port === DEFAULT_PORT[scheme] ? '' : `:${port}`}`;
  let url: URL;
  try {
    url = new URL(written);
  } catch {
    return null;
  }
  // Only an IPv6 address may be rewritten (compressed); anything else must come back as written.
  if (!host.startsWith('[') && url.origin !== written) return null;
  return url.origin;
}

function validHost(host: string): boolean {
  if (host.startsWith('[')) return isIPv6(host.slice(1, -1));
  const labels = host.split('.');
  // A name whose last label is numeric is read as an IPv4 address by URL parsers: it must be one, written plainly.
  if (/^[0-9]+$/.test(labels.at(-1)!)) return labels.length === 4 && labels.every((part) => OCTET.test(part) && Number(part) <= 255);
  return host.length <= 253 && labels.every((label) => LABEL.test(label));
}
