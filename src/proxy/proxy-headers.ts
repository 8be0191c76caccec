/**
 * Which headers cross the proxy (docs/proxies.md). Toward the destination: never the vault's own
 * headers (`<prefix>-*`: the API key, the proxy URL and key, idempotency keys; the HTTP layer drops
 * those before the service sees the request), never hop-by-hop or connection-level headers (the
 * transport owns the connection, so a caller cannot smuggle a second request or hide the host).
 * Back to the caller: the destination's headers except hop-by-hop ones, `set-cookie` (a destination
 * must not set cookies on the vault's origin) and any that claim the vault's own prefix.
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

/** The request headers sent on, lower-case; `connection` may name further hop-by-hop headers. */
export function forwardedRequestHeaders(headers: Iterable<[string, string]>): Record<string, string> {
  const entries = [...headers].map(([name, value]) => [name.toLowerCase(), value] as const);
  const named = connectionTokens(entries);
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of entries) {
    if (HOP_BY_HOP.has(name) || name.startsWith('proxy-') || named.has(name)) continue;
    out[name] = name in out ? `${out[name]}, ${value}` : value;
  }
  return out;
}

/** The destination's headers the caller gets, in order; `reservedPrefix` is the vault's header prefix (lower-case, with its dash). */
export function returnedResponseHeaders(headers: readonly [string, string][], reservedPrefix: string | null): [string, string][] {
  const named = connectionTokens(headers);
  return headers.filter(
    ([name]) =>
      !HOP_BY_HOP.has(name) && !name.startsWith('proxy-') && !named.has(name) && name !== 'set-cookie' && (reservedPrefix === null || !name.startsWith(reservedPrefix)),
  );
}

function connectionTokens(entries: Iterable<readonly [string, string]>): Set<string> {
  const named = new Set<string>();
  for (const [name, value] of entries) {
    if (name !== 'connection') continue;
    for (const token of value.split(',')) if (token.trim() !== '') named.add(token.trim().toLowerCase());
  }
  return named;
}
