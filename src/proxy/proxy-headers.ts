/**
 * Which headers cross the proxy (docs/proxies.md). Toward the destination: never the vault's own
 * headers (`<prefix>-*`: the API key, the proxy URL and key, idempotency keys; the HTTP layer drops
 * those before the service sees the request), never hop-by-hop or connection-level headers (the
 * transport owns the connection, so a caller cannot smuggle a second request or hide the host),
 * never what claims a client's address (`forwarded`, `x-forwarded-*`, `x-real-ip`, ...): the vault
 * is the destination's client, and an inbound caller could otherwise name any address to a
 * destination that trusts the vault's.
 * Back to the caller: the destination's headers except hop-by-hop ones, any that claim the vault's
 * own prefix, and those a browser reads as a policy of the origin that served them (cookies, CORS,
 * CSP, HSTS, clear-site-data, cross-origin policies, ...): a proxied answer comes from the vault's
 * origin and must not set its browser security. Every proxied answer also carries
 * `content-security-policy: sandbox` and `x-content-type-options: nosniff`, so a text/html answer
 * opened in a browser runs no script with the vault's origin and is not sniffed into one.
 */

/** Hop-by-hop (RFC 9110 7.6.1) and transport-owned headers, lower-case. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'expect',
  'http2-settings',
]);

/** Headers that claim the client's address or the address the client used, lower-case. */
const CLIENT_ADDRESS = new Set(['forwarded', 'x-real-ip', 'x-client-ip', 'true-client-ip', 'cf-connecting-ip', 'fastly-client-ip', 'x-cluster-client-ip']);

/** Response headers that set a policy of the origin (lower-case); never returned from a destination. */
const ORIGIN_POLICY = new Set([
  'set-cookie',
  'set-cookie2',
  'clear-site-data',
  'strict-transport-security',
  'public-key-pins',
  'public-key-pins-report-only',
  'expect-ct',
  'x-frame-options',
  'x-xss-protection',
  'x-content-type-options',
  'x-permitted-cross-domain-policies',
  'x-dns-prefetch-control',
  'permissions-policy',
  'feature-policy',
  'document-policy',
  'origin-agent-cluster',
  'referrer-policy',
  'report-to',
  'reporting-endpoints',
  'nel',
  'service-worker-allowed',
  'supports-loading-mode',
  'accept-ch',
  'critical-ch',
  'alt-svc',
  'refresh',
  'link',
  'timing-allow-origin',
  'sourcemap',
  'x-sourcemap',
]);
/** Prefixes of the same (CORS, CSP and its report-only twin, COOP/COEP/CORP, fetch metadata). */
const ORIGIN_POLICY_PREFIXES = ['access-control-', 'content-security-policy', 'cross-origin-', 'sec-'];

/** Added to every proxied answer (the destination's own values of these were dropped). */
export const PROXIED_ANSWER_HEADERS: readonly [string, string][] = Object.freeze([
  ['content-security-policy', 'sandbox'],
  ['x-content-type-options', 'nosniff'],
]);

function setsOriginPolicy(name: string): boolean {
  return ORIGIN_POLICY.has(name) || ORIGIN_POLICY_PREFIXES.some((prefix) => name.startsWith(prefix));
}

/** The request headers sent on, lower-case; `connection` may name further hop-by-hop headers. */
export function forwardedRequestHeaders(headers: Iterable<[string, string]>): Record<string, string> {
  const entries = [...headers].map(([name, value]) => [name.toLowerCase(), value] as const);
  const named = connectionTokens(entries);
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of entries) {
    if (HOP_BY_HOP.has(name) || name.startsWith('proxy-') || named.has(name) || CLIENT_ADDRESS.has(name) || name.startsWith('x-forwarded-')) continue;
    out[name] = name in out ? `${out[name]}, ${value}` : value;
  }
  return out;
}

/**
 * The destination's headers the caller gets, in order, then PROXIED_ANSWER_HEADERS;
 * `reservedPrefix` is the vault's header prefix (lower-case, with its dash).
 */
export function returnedResponseHeaders(headers: readonly [string, string][], reservedPrefix: string | null): [string, string][] {
  const named = connectionTokens(headers);
  const kept = headers.filter(
    ([name]) => !HOP_BY_HOP.has(name) && !name.startsWith('proxy-') && !named.has(name) && !setsOriginPolicy(name) && (reservedPrefix === null || !name.startsWith(reservedPrefix)),
  );
  return [...kept, ...PROXIED_ANSWER_HEADERS.map(([name, value]): [string, string] => [name, value])];
}

function connectionTokens(entries: Iterable<readonly [string, string]>): Set<string> {
  const named = new Set<string>();
  for (const [name, value] of entries) {
    if (name !== 'connection') continue;
    for (const token of value.split(',')) if (token.trim() !== '') named.add(token.trim().toLowerCase());
  }
  return named;
}
