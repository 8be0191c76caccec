/**
 * `tokenvault/node`: runs a fetch handler in Node's http server (or anything that takes a
 * `(req, res)` listener: Express, Fastify's raw mode, Connect). It only converts; it decides nothing.
 * @example
 * import { createServer } from 'node:http';
 * import { createFetchHandler } from 'tokenvault/http';
 * import { toNodeListener } from 'tokenvault/node';
 * createServer(toNodeListener(createFetchHandler(vault))).listen(8080);
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PayloadTooLargeError, ValidationError } from '../errors.js';
import { atTurnEnd } from '../turn-end.js';
import { concat } from './body.js';
import { splitTarget } from './request-target.js';
import { EXCHANGE_HANDLER, type ExchangeHandler, type ExchangeRequest, type ExchangeResponse, type WithExchange } from './exchange.js';

/** A Node http request listener. */
export type NodeListener = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Converts a fetch handler into a Node request listener: the IncomingMessage becomes a Request
 * whose body streams (with back-pressure) and whose signal aborts when the client goes away; the
 * Response is streamed back into the ServerResponse.
 *
 * A handler made by `createFetchHandler` is called through its core instead, with the same
 * behaviour but without building web Request and Response objects (they cost more per request
 * than routing, authentication and the token read together; see test/bench/http.mjs).
 */
export function toNodeListener(handler: (request: Request) => Promise<Response>): NodeListener {
  const core = (handler as WithExchange<typeof handler>)[EXCHANGE_HANDLER];
  if (core) {
    return (req, res) => {
      void serveExchange(core, req, res);
    };
  }
  return (req, res) => {
    void serve(handler, req, res);
  };
}

async function serveExchange(core: ExchangeHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let response: ExchangeResponse;
  try {
    response = await core(new NodeExchangeRequest(req));
  } catch {
    // The core answers every failure itself; this is a bug, and a bug must not take the process down.
    response = { status: 500, headers: { 'cache-control': 'no-store' }, body: null };
  }
  const headers = response.headers;
  if (response.body !== null) headers['content-length'] = String(Buffer.byteLength(response.body));
  // Answered before the whole body arrived (413, 401…): close rather than read what remains.
  if (!req.complete) headers['connection'] = 'close';
  if (unwritten.length === 0) atTurnEnd(writeUnwritten);
  unwritten.push(res, response);
}

/**
 * Responses finished during this turn of the event loop, written together at its end (alternating
 * ServerResponse, ExchangeResponse). Under load a turn finishes many requests; writing them in one
 * burst wakes each waiting client process once per burst instead of once per response, and a
 * wake-up of another (virtual) CPU costs more than a token read: on a 2-core VM this batching took
 * the GET server from 85 to 52 µs of CPU per request (test/bench/compare.mjs). Idle, a response
 * waits only for the end of the current turn.
 */
let unwritten: (ServerResponse | ExchangeResponse)[] = [];

function writeUnwritten(): void {
  const batch = unwritten;
  unwritten = [];
  for (let i = 0; i < batch.length; i += 2) {
    const res = batch[i] as ServerResponse;
    const response = batch[i + 1] as ExchangeResponse;
    try {
      res.writeHead(response.status, response.headers);
      res.end(response.body ?? undefined);
    } catch {
      // A socket or header failure: there is nothing left to tell.
      if (!res.headersSent) {
        res.statusCode = 500;
        res.end();
      } else res.destroy();
    }
  }
}

/** An IncomingMessage as the core sees it; methods on a prototype, no closures per request. */
class NodeExchangeRequest implements ExchangeRequest {
  readonly method: string;
  readonly pathname: string;
  readonly search: string;
  readonly hasBody: boolean;
  readonly #req: IncomingMessage;

  constructor(req: IncomingMessage) {
    this.#req = req;
    this.method = req.method ?? 'GET';
    const { pathname, search } = splitTarget(relativeTarget(req));
    this.pathname = pathname;
    this.search = search;
    this.hasBody = hasBody(req, this.method);
  }

  header(name: string): string | null {
    const value = this.#req.headers[name];
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
  }

  readBody(maxBytes: number): Promise<Uint8Array> {
    return readNodeBody(this.#req, maxBytes);
  }
}

function hasBody(req: IncomingMessage, method: string): boolean {
  return !BODYLESS.has(method) && (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0);
}

/** Collects the body as it arrives; past the limit it stops collecting and discards the rest. */
function readNodeBody(req: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onBroken);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total > maxBytes) {
        cleanup();
        req.resume();
        reject(new PayloadTooLargeError(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(concat(chunks, total));
    };
    const onBroken = () => {
      cleanup();
      reject(ValidationError.field('body', 'could not be read completely'));
    };
    const onClose = () => {
      if (!req.complete) onBroken();
    };
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onBroken);
    req.once('close', onClose);
  });
}

async function serve(handler: (request: Request) => Promise<Response>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  let response: Response;
  try {
    response = await handler(toRequest(req, controller.signal));
  } catch (error) {
    // A handler that throws, or a request Node accepted but fetch cannot represent (an invalid
    // header value): answer without detail.
    const status = error instanceof TypeError ? 400 : 500;
    response = new Response(null, { status });
  }
  await writeResponse(req, res, response, controller.signal);
}

const BODYLESS = new Set(['GET', 'HEAD']);

function toRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  const method = req.method ?? 'GET';
  const init: RequestInit & { duplex?: 'half' } = { method, headers, signal };
  if (hasBody(req, method)) {
    init.body = bodyStream(req);
    init.duplex = 'half';
  }
  return new Request(requestUrl(req), init);
}

/** The request target as a path (absolute-form targets, sent to proxies, keep only their path). */
function relativeTarget(req: IncomingMessage): string {
  const path = req.url ?? '/';
  if (path.startsWith('/')) return path;
  if (/^https?:\/\//i.test(path)) {
    try {
      const url = new URL(path);
      return url.pathname + url.search;
    } catch {
      return '/';
    }
  }
  return `/${path}`;
}

function requestUrl(req: IncomingMessage): string {
  const path = req.url ?? '/';
  // Absolute-form request targets (proxies) already carry scheme and host.
  if (/^https?:\/\//i.test(path)) return path;
  const scheme = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  const relative = path.startsWith('/') ? path : `/${path}`;
  const host = req.headers.host;
  if (host) {
    try {
      // Parsed once here to reject a malformed Host; the Request parses the string again.
      return new URL(`${scheme}://${host}${relative}`).href;
    } catch {
      // An unparseable Host header: fall through to localhost; routing only uses the path.
    }
  }
  return `${scheme}://localhost${relative}`;
}

/** The request body as a web stream that pauses the socket while the reader is behind. */
function bodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let settled = false;
  const onData = (chunk: Buffer) => {
    if (settled) return;
    controllerRef?.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if ((controllerRef?.desiredSize ?? 0) <= 0) req.pause();
  };
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controllerRef = controller;
        req.on('data', onData);
        req.once('end', () => {
          if (settled) return;
          settled = true;
          controller.close();
        });
        req.once('error', (error) => {
          if (settled) return;
          settled = true;
          controller.error(error);
        });
        req.once('close', () => {
          if (settled || req.complete) return;
          settled = true;
          controller.error(new Error('The client closed the connection before the body was complete'));
        });
      },
      pull() {
        req.resume();
      },
      cancel() {
        // The handler stopped reading (e.g. a body over the limit): drop the rest without buffering it.
        settled = true;
        req.off('data', onData);
        req.resume();
      },
    },
    { highWaterMark: 1 },
  );
}

async function writeResponse(req: IncomingMessage, res: ServerResponse, response: Response, signal: AbortSignal): Promise<void> {
  if (res.destroyed) return;
  res.statusCode = response.status;
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') res.setHeader(name, value);
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) res.setHeader('set-cookie', cookies);
  // The handler answered before reading the whole body (413, 401…): close the connection rather
  // than read (and discard) whatever else the client sends.
  if (!req.complete) res.setHeader('connection', 'close');
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await drained(res, signal);
      if (signal.aborted) {
        await reader.cancel();
        return;
      }
    }
    res.end();
  } catch {
    // The response stream failed midway: the status is already sent, so cut the connection.
    res.destroy();
  }
}

function drained(res: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}
