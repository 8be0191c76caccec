/**
 * The browser-set `Origin` of a request from a page other than the vault's own, for the allowed
 * origins check (docs/elements.md, "Allowed page origins"): null when there is none (non-browser
 * clients, same-origin GETs) or when its host is the vault's own (`Host`: the request a vault frame
 * sends from the vault's origin; the scheme is not compared, so TLS ended by a proxy in front still
 * matches). Anything else, the opaque `null` included, is returned as sent (bounded) to be checked.
 */
export function foreignOrigin(origin: string | null, host: string | null): string | null {
  if (origin === null) return null;
  const value = origin.trim().slice(0, 300);
  if (host !== null) {
    try {
      if (new URL(value).host === host.trim().toLowerCase()) return null;
    } catch {
      // Not a URL (`null` or garbage): never the vault's own.
    }
  }
  return value;
}
