/**
 * Where an ephemeral proxy request may go (docs/proxies.md, Destination rules): an https URL whose
 * host is a DNS name, on an allowed port, resolving only to public addresses; the connection is
 * then made to the address that was checked (proxy-transport.ts pins it), so a DNS answer that
 * changes after the check (rebinding) is not used. The development switch
 * (`reactors.egress.allowPrivateNetwork`, `--allow-private-network`) also admits non-public
 * addresses, loopback IP literals, any port on loopback, and plain http to loopback, so that tests
 * and local development can use a local receiver.
 */
import { isIP } from 'node:net';
import { ValidationError } from '../errors/errors.js';
import { hostOf, resolvePublicTarget, type Target } from '../sandbox/egress/egress-target.js';

/** Where and how the destination is judged. */
export interface DestinationRules {
  allowPrivateNetwork: boolean;
  allowPorts: ReadonlySet<number>;
}

const URL_FIELD = 'url';

/**
 * The destination URL of a proxied request: the base (the `<prefix>-PROXY-URL` header) with the
 * path and query that followed `/proxy` appended (`url` in error fields). Throws ValidationError (400) for a URL the rules
 * refuse before any lookup; the address rules are checked by `resolveDestination`.
 */
export function destinationUrl(base: string | null, path: string, search: string, rules: DestinationRules): URL {
  if (base === null || base.trim() === '') throw ValidationError.field(URL_FIELD, "is required: the destination's base URL (the <prefix>-PROXY-URL header over HTTP)");
  let url: URL;
  try {
    url = new URL(base.trim());
  } catch {
    throw ValidationError.field(URL_FIELD, "is not an absolute URL: give the destination's base URL, such as https://api.example.com/v1");
  }
  if (url.username !== '' || url.password !== '') throw ValidationError.field(URL_FIELD, 'must not hold credentials (user:password@); send them in a header');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && rules.allowPrivateNetwork)) {
    throw ValidationError.field(URL_FIELD, `must use https${rules.allowPrivateNetwork ? ' (or http to a loopback address)' : ''}`);
  }
  const host = hostOf(url);
  if (isIP(host) !== 0 && !(rules.allowPrivateNetwork && isLoopback(host))) throw ValidationError.field(URL_FIELD, 'must name its host by a DNS name, not an IP address');
  if (!rules.allowPrivateNetwork && !host.includes('.')) throw ValidationError.field(URL_FIELD, 'must name a fully qualified DNS host, such as api.example.com');
  if (climbs(path)) throw ValidationError.field('path', "must not hold '.' or '..' segments");
  if (path.includes('\\')) throw ValidationError.field('path', 'must not hold backslashes');
  // The base's trailing slash goes only when a path follows (`/v1/` + `/charges`); alone it stays
  // (`/v1/` is not `/v1` to every server).
  const basePath = path !== '' && url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname;
  const query = [url.search.replace(/^\?/, ''), search.replace(/^\?/, '')].filter((q) => q !== '').join('&');
  url.pathname = basePath + path;
  url.search = query === '' ? '' : `?${query}`;
  url.hash = '';
  return url;
}

/**
 * Whether a path holds a dot segment as some server may read it: a pre-configured proxy's caller
 * must stay below the proxy's base path (docs/proxies.md, Calling a pre-configured proxy). Each
 * segment is percent-decoded up to three times (servers that decode twice), then split at
 * slashes and backslashes (servers that decode %2F or %5C before resolving) and at `;` (Tomcat
 * and Spring read `..;jsessionid=1` as `..`); any `.` or `..` piece refuses it. `%2F` inside a
 * name (`group%2Fproject`) and `...` stay allowed.
 */
function climbs(path: string): boolean {
  for (const segment of path.split('/')) {
    let text = segment;
    for (let round = 0; round < 3 && text.includes('%'); round++) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(text);
      } catch {
        break;
      }
      if (decoded === text) break;
      text = decoded;
    }
    if (text.split(/[/\\;]/).some((piece) => piece === '.' || piece === '..')) return true;
  }
  return false;
}

/**
 * Resolves the destination's host and checks every address it resolves to and its port; returns
 * the target to connect to (pinned). RefusedDestinationError (a plain Error: the service maps it to
 * 403) when an address is not public and the development switch is off.
 */
export async function resolveDestination(url: URL, rules: DestinationRules): Promise<Target> {
  const target = await resolvePublicTarget(url, rules.allowPrivateNetwork);
  const loopback = isLoopback(target.address);
  if (url.protocol === 'http:' && !loopback) throw ValidationError.field(URL_FIELD, 'must use https (plain http is allowed to loopback addresses only)');
  checkPort(url, rules, loopback);
  return target;
}

/** The target of a URL sent through a supplied fetch, which resolves the name itself: only the port is checked here. */
export function unresolvedTarget(url: URL, rules: DestinationRules): Target {
  // With the development switch, any port (as for loopback): the fetch decides where it goes.
  checkPort(url, rules, rules.allowPrivateNetwork);
  return { url, host: hostOf(url), address: '', family: 4 };
}

function checkPort(url: URL, rules: DestinationRules, loopback: boolean): void {
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (!(rules.allowPrivateNetwork && loopback) && !rules.allowPorts.has(port)) {
    throw ValidationError.field(URL_FIELD, `uses port ${port}; allowed ports: ${[...rules.allowPorts].join(', ')}`);
  }
}

function isLoopback(address: string): boolean {
  if (address === '::1') return true;
  if (isIP(address) === 4) return address.startsWith('127.');
  if (address.toLowerCase().startsWith('::ffff:')) return isLoopback(address.slice(7));
  return false;
}
