/**
 * The runtime-neutral shape of one HTTP exchange, between the handler and its adapters. The fetch
 * handler converts a web Request into it; the Node adapter converts an IncomingMessage into it
 * directly (skipping the Request and Response objects, which cost more than the routing itself).
 */

/** Reads the whole body, failing with a 413 past `maxBytes` and a 400 if the client goes away. */
export type BodyReader = (maxBytes: number) => Promise<Uint8Array>;

/** A request as the handler core sees it. */
export interface ExchangeRequest {
  method: string;
  /** The path, still percent-encoded, normalized as the WHATWG URL parser would (`/tokens/abc`). */
  pathname: string;
  /** The query with its `?` (or ''), as the WHATWG URL parser would give it. */
  search: string;
  /** A header's value by lower-case name (repeated headers joined with ", "), or null. */
  header(name: string): string | null;
  /** False when the request certainly has no body (no Content-Length > 0, no Transfer-Encoding). */
  hasBody: boolean;
  readBody: BodyReader;
}

/** A response as the handler core produces it: always complete (never streamed). */
export interface ExchangeResponse {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The body text, or null for none. */
  body: string | null;
}

export type ExchangeHandler = (request: ExchangeRequest) => Promise<ExchangeResponse>;

/**
 * The property under which a fetch handler made by createFetchHandler carries its core, so that
 * `toNodeListener` can call it without building web Request/Response objects. Any other fetch
 * handler is adapted the standard way.
 */
export const EXCHANGE_HANDLER: unique symbol = Symbol.for('tokenvault.http.exchange-handler');

/** A fetch handler that may carry its exchange core. */
export type WithExchange<F> = F & { readonly [EXCHANGE_HANDLER]?: ExchangeHandler };
