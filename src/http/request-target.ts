/**
 * A target of the characters the WHATWG URL parser leaves as they are in a path and a query, with
 * no dot segment (also not percent-encoded) for it to resolve. Such a target splits at its `?`
 * exactly as `new URL` would split it; anything else goes through `new URL`.
 */
const PLAIN_TARGET = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*(?:\?[A-Za-z0-9\-._~!$&()*+,;=:@%/?]*)?$/;
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?:[/?]|$)/i;

/** Path and query of a relative target, as `new URL` gives them; a plain target skips the parser. */
export function splitTarget(target: string): { pathname: string; search: string } {
  if (PLAIN_TARGET.test(target) && !DOT_SEGMENT.test(target)) {
    const q = target.indexOf('?');
    // `new URL` drops a bare trailing '?'.
    return q === -1 ? { pathname: target, search: '' } : { pathname: target.slice(0, q), search: q === target.length - 1 ? '' : target.slice(q) };
  }
  // A fixed origin: routing needs only the path and query, so the Host header is not parsed.
  const url = new URL(`http://localhost${target}`);
  return { pathname: url.pathname, search: url.search };
}
