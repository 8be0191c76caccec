import type { AuthenticatedRoute } from './routes/route.js';

/** The fingerprint of an HTTP request: the same key with another method, path, query or body is another request (422). */
export function requestFingerprint(method: string, pathAndQuery: string, body: string | null): string {
  return `${method}\n${pathAndQuery}\n${body ?? ''}`;
}

/**
 * The tokens whose data a response of `route` may carry, as the route declares them (its
 * `carries`, routes/carried-tokens.ts), so the stored response can be withdrawn when one of them
 * is deleted, expires or loses its cvc. A route that declares nothing carries no token data.
 */
export function referencedTokenIds(route: Pick<AuthenticatedRoute, 'carries'>, params: Record<string, string>, body: unknown, result: unknown): string[] {
  return route.carries === undefined ? [] : [...new Set(route.carries({ params, body, result }))];
}
