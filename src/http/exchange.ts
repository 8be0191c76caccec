/**
 * One HTTP exchange as the handler core sees it (fetch-handler.ts): the core reads a request
 * through this small interface and answers a complete response, and createFetchHandler converts a
 * web Request into it and its answer into a web Response. Internal to the HTTP layer: adapters
 * only ever see the public `(Request) => Promise<Response>`.
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
