/**
 * `serve --behind-proxy <addresses>`: TLS ends at a reverse proxy in front, and the vault answers
 * its API only through it (docs/production.md, TLS in front). The API port then:
 * - answers API requests only from the listed proxies (a 403 to any other peer, so a client that
 *   reaches the port directly, around the proxy and its TLS, is told so instead of served in clear);
 * - answers them only when the proxy says the client spoke HTTPS to it (`X-Forwarded-Proto: https`;
 *   `http` or no header is a 400 saying to use https, as the TLS port answers plain HTTP);
 * - believes X-Forwarded-For from those proxies only (the default of `--trust-forwarded-for`).
 * The probes (/healthz, /readyz) answer any peer: an orchestrator probes the process directly.
 * No Strict-Transport-Security header is added: the proxy that holds the certificate sends it if
 * wanted (a vault's clients are servers, SDKs and frames loaded from an https URL).
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { BlockList, isIP } from 'node:net';
import * as v from 'valibot';
import { AuthorizationError, ValidationError } from '../errors/errors.js';
import { problemOfError } from '../errors/problem.js';
import { TrustForwardedForSchema } from '../http/client-address.js';
import { UsageError } from './io.js';

/** Paths that answer any peer under --behind-proxy (their routes need no key and return no data). */
const PROBE_PATHS = new Set(['/healthz', '/readyz']);

/** The proxies' addresses, checked once: a usage error naming the flag and the entry otherwise. */
export function behindProxyFlag(value: string | undefined): readonly string[] | undefined {
  if (value === undefined) return undefined;
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) throw new UsageError('--behind-proxy needs the addresses or CIDR ranges of the proxies in front (127.0.0.1,10.0.0.0/8)');
  const checked = v.safeParse(TrustForwardedForSchema, entries);
  if (!checked.success) {
    const index = checked.issues[0].path?.[0]?.key;
    throw new UsageError(`--behind-proxy: '${typeof index === 'number' ? entries[index] : value}' ${checked.issues[0].message}`);
  }
  return entries;
}

const plain = (address: string) => (address.toLowerCase().startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address);

/** A BlockList of the entries (an address or a CIDR range each, already checked). */
function proxyList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split('/') as [string, string | undefined];
    const family = isIP(plain(address)) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(plain(address), family);
    else list.addSubnet(plain(address), Number(prefix), family);
  }
  return list;
}

/** Wraps the API listener: only the listed proxies, and only for clients that spoke HTTPS to them. */
export function behindProxyListener(listener: RequestListener, entries: readonly string[]): RequestListener {
  const proxies = proxyList(entries);
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (PROBE_PATHS.has(path)) return listener(req, res);
    const peer = plain(req.socket.remoteAddress ?? '');
    if (!(isIP(peer) !== 0 && proxies.check(peer, isIP(peer) === 6 ? 'ipv6' : 'ipv4'))) {
      return refuse(res, new AuthorizationError('This vault is served behind a reverse proxy (--behind-proxy): call it through the proxy, over https'));
    }
    // The last value is the one the nearest proxy (a listed one) wrote.
    const proto = String(req.headers['x-forwarded-proto'] ?? '')
      .split(',')
      .pop()!
      .trim()
      .toLowerCase();
    if (proto !== 'https') {
      const why = proto === '' ? 'the proxy sent no X-Forwarded-Proto (set it to the scheme the client used)' : `the client used ${proto}: use https://`;
      return refuse(res, ValidationError.field('X-Forwarded-Proto', `must be https: this vault answers only requests that reached its proxy over TLS; ${why}`));
    }
    return listener(req, res);
  };
}

function refuse(res: ServerResponse, error: AuthorizationError | ValidationError): void {
  const body = JSON.stringify(problemOfError(error));
  // The request's body is not read: close the connection rather than drain it.
  res.writeHead(problemOfError(error).status, { 'content-type': 'application/problem+json', 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.end(body);
}
