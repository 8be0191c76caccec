import type { ReactorError } from '../errors/errors.js';
import type { ExchangeResponse } from './exchange.js';

/**
 * Reactor code answers on the vault's own origin, so what it may say in headers is allow-listed:
 * `retry-after`, and `x-` names that steer nothing in browsers, proxies or servers. Never cookies,
 * redirects, CORS, caching, framing, content type or length, HSTS, CSP, authentication challenges,
 * `vary`, or the vault's own `<prefix>-` headers. Anything else is dropped silently (the response
 * still goes out; README "Reactors" lists the rule for authors).
 */
const ALLOWED_NAMES = new Set(['retry-after']);

/** `x-` names that are security-relevant, or that proxies and servers act on (internal redirects, forwarding, method overrides). */
const DENIED_X_NAMES = new Set([
  'x-frame-options',
  'x-content-type-options',
  'x-xss-protection',
  'x-permitted-cross-domain-policies',
  'x-dns-prefetch-control',
  'x-download-options',
  'x-ua-compatible',
  'x-powered-by',
  'x-real-ip',
  'x-sendfile',
  'x-lighttpd-send-file',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  'x-original-url',
  'x-rewrite-url',
  'x-webkit-csp',
  'x-content-security-policy',
]);
const DENIED_X_PREFIXES = ['x-forwarded-', 'x-accel-', 'x-middleware-', 'x-vercel-', 'x-amz-', 'x-goog-', 'x-ms-'];

/** At most this many reactor headers, each value at most this long: a reactor cannot bloat the response head. */
export const MAX_REACTOR_HEADERS = 32;
export const MAX_REACTOR_HEADER_VALUE = 1024;

/** Every response of the vault, a reactor's included: it may hold data, so no cache keeps it. */
const NO_STORE = 'no-store';

/** True when reactor code may set a response header of this (lower-case) name. */
export function reactorMaySetHeader(name: string, reservedPrefix: string | null): boolean {
  if (reservedPrefix !== null && name.startsWith(`${reservedPrefix.toLowerCase()}-`)) return false;
  if (ALLOWED_NAMES.has(name)) return true;
  if (!name.startsWith('x-') || DENIED_X_NAMES.has(name)) return false;
  return !DENIED_X_PREFIXES.some((prefix) => name.startsWith(prefix));
}

/**
 * The HTTP response of a reactor's CustomHttpResponseError: its status (200-599), its allowed
 * headers, and its body as JSON with the vault's `content-type: application/json` (none for 204,
 * 205 and 304) and `cache-control: no-store`. Null when the status or body is unusable (the caller
 * then renders the error as a problem document).
 */
export function reactorResponse(error: ReactorError, reservedPrefix: string | null): ExchangeResponse | null {
  const status = Number.isInteger(error.status) && error.status >= 200 && error.status <= 599 ? error.status : null;
  if (status === null) return null;
  // Headers validates names and values the way every runtime will; invalid ones are dropped.
  const valid = new Headers();
  let count = 0;
  for (const [name, value] of Object.entries(error.headers ?? {})) {
    const text = String(value);
    if (count >= MAX_REACTOR_HEADERS || text.length > MAX_REACTOR_HEADER_VALUE || !reactorMaySetHeader(name.toLowerCase(), reservedPrefix)) continue;
    try {
      valid.set(name, text);
      count++;
    } catch {
      // An invalid header name or value from reactor code is dropped rather than failing the response.
    }
  }
  const headers: Record<string, string> = {};
  valid.forEach((value, name) => {
    headers[name] = value;
  });
  headers['cache-control'] = NO_STORE;
  if (status === 204 || status === 205 || status === 304) return { status, headers, body: null };
  let body: string;
  try {
    body = JSON.stringify(error.body ?? null);
  } catch {
    return null;
  }
  headers['content-type'] = 'application/json';
  return { status, headers, body };
}
