import { planDetokenize } from '../reactors/detokenize.js';
import { idsIn } from '../idempotency/idempotency-service.js';

/** The fingerprint of an HTTP request: the same key with another method, path, query or body is another request (422). */
export function requestFingerprint(method: string, pathAndQuery: string, body: string | null): string {
  return `${method}\n${pathAndQuery}\n${body ?? ''}`;
}

/**
 * The tokens whose data a response of a route may carry, so the stored response can be withdrawn
 * when one of them is deleted, expires or loses its cvc:
 * - token routes (`/tokens…`, `/tokenize`): every `id` in the response (the token read, updated,
 *   created or found) and the path's token id;
 * - `/detokenize`: the tokens the body's expressions name (the response is their data);
 * - reactor invocations (`/reactors/{id}/react`): the tokens named by `{{ id }}` expressions in the
 *   request's args (their data is what the reactor received) and every `id` in the response (the
 *   tokens the run created); what the reactor's code read through `req.bt` the run reports itself
 *   (src/idempotency/run-dependencies.ts);
 * - other routes carry no token data: none.
 * Over-inclusion costs nothing: ids that name no token are ignored by the store.
 */
export function referencedTokenIds(routePath: string, params: Record<string, string>, body: unknown, result: unknown): string[] {
  if (routePath === '/detokenize') return [...namedTokens(body)];
  const isReact = routePath === '/reactors/{id}/react';
  if (!isReact && !routePath.startsWith('/tokens') && routePath !== '/tokenize') return [];
  const ids = idsIn(result);
  if (!isReact && params['id'] !== undefined) ids.add(params['id']);
  if (isReact && typeof body === 'object' && body !== null) {
    for (const id of namedTokens((body as { args?: unknown }).args)) ids.add(id);
  }
  return [...ids];
}

/** The token ids a detokenize body or reactor args name; none when it does not parse (such a request ran nothing). */
function namedTokens(value: unknown): Iterable<string> {
  try {
    return planDetokenize(value, 'body').ids.keys();
  } catch {
    return [];
  }
}
