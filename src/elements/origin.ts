/**
 * A page origin as browsers send it, normalized (`https://shop.example`, `http://127.0.0.1:3000`):
 * http or https, a host and an optional port, nothing else (no path, query, fragment, credentials,
 * trailing slash or wildcard); null when the value is not one. Shared by the application input
 * (allowed_origins) and the frame page's `origin` parameter.
 */
export function parseOrigin(value: string): string | null {
  if (value.length > 200 || /[/?#@\s]$|[?#@*\\]/.test(value)) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  return url.pathname === '/' ? url.origin : null;
}
