import { idsIn } from '../../idempotency/idempotency-service.js';
import { planDetokenize } from '../../tokens/detokenize.js';
import type { CarriedExchange } from './route.js';

/*
 * What a route declares as `carries` (route.ts): the ids of the tokens whose data its response may
 * hold, so that a stored idempotent response is withdrawn when one of them is deleted, expires or
 * loses its cvc. Over-inclusion costs nothing: ids that name no token are ignored by the store.
 */

/** A token route: every `id` in the response (the token read, updated, created or found) and the path's token id. */
export function tokensInResult({ params, result }: CarriedExchange): Iterable<string> {
  const ids = idsIn(result);
  if (params['id'] !== undefined) ids.add(params['id']);
  return ids;
}

/** `/detokenize`: the tokens the body's expressions name (the response is their data). */
export function tokensNamedInBody({ body }: CarriedExchange): Iterable<string> {
  return namedTokens(body);
}

/**
 * A reactor invocation: the tokens named by `{{ id }}` expressions in the request's args (their data
 * is what the reactor received) and every `id` in the response (the tokens the run created); what
 * the reactor's code read through `req.bt` the run reports itself (src/idempotency/run-dependencies.ts).
 */
export function tokensOfInvocation({ body, result }: CarriedExchange): Iterable<string> {
  const ids = idsIn(result);
  if (typeof body === 'object' && body !== null) {
    for (const id of namedTokens((body as { args?: unknown }).args)) ids.add(id);
  }
  return ids;
}

/** The token ids a detokenize body or reactor args name; none when it does not parse (such a request ran nothing). */
function namedTokens(value: unknown): Iterable<string> {
  try {
    return planDetokenize(value, 'body').ids.keys();
  } catch {
    return [];
  }
}
