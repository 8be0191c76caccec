/**
 * The network address of the client of a request, which a web Request does not carry: the adapter
 * that made the Request attaches it (the Node adapter does, from the socket), under a registered
 * symbol so that separately bundled entry points (`tokenvault/node`, `tokenvault/http`) agree.
 * The handler reads it for the rate limit of unauthenticated inbound proxy calls
 * (docs/proxies.md, Inbound). Another runtime's adapter calls `withClientAddress` itself.
 */
const CLIENT_ADDRESS = Symbol.for('tokenvault.clientAddress');

/** Attaches the client's address to a request (returns the same request). */
export function withClientAddress<R extends Request>(request: R, address: string | null | undefined): R {
  if (typeof address === 'string' && address !== '') Object.defineProperty(request, CLIENT_ADDRESS, { value: address, enumerable: false });
  return request;
}

/**
 * The client's address: the one the adapter attached; with `trustForwardedFor`, the last entry of
 * X-Forwarded-For (the one the trusted reverse proxy in front added) when there is one.
 */
export function clientAddressOf(request: Request, trustForwardedFor: boolean): string | null {
  if (trustForwardedFor) {
    const forwarded = request.headers.get('x-forwarded-for');
    const last = forwarded?.split(',').map((part) => part.trim()).filter((part) => part !== '').pop();
    if (last !== undefined) return last;
  }
  const attached = (request as unknown as Record<symbol, unknown>)[CLIENT_ADDRESS];
  return typeof attached === 'string' ? attached : null;
}
