import type { IncomingMessage, ServerResponse } from 'node:http';
import { LazyHeaders } from './lazy-headers.js';

/*
 * A web Request for a Node IncomingMessage that is built only as far as it is read, the way
 * @hono/node-server does it: it is a Request (its prototype chain is Request.prototype, so
 * `instanceof Request` holds), `method` and `url` are plain strings, `headers` is made on first
 * read, and everything else (the body, the signal, clone(), text()…) comes from a real Request built
 * on first need. A GET that reads only its method, URL and a few headers never builds one: on a
 * token read that costs more than the routing, authentication and decryption together.
 */

const incoming = Symbol('incoming');
const url = Symbol('url');
const headersCache = Symbol('headers');
const real = Symbol('real');
const abort = Symbol('abort');
const consumed = Symbol('consumed');
const response = Symbol('response');

interface NodeRequestFields {
  [incoming]: IncomingMessage;
  [url]: string;
  [headersCache]?: Headers;
  [real]?: Request;
  [abort]?: AbortController;
  /** The message's response: its closing before it finished is the client going away. */
  [response]?: ServerResponse;
  /** The body was read straight from the message (arrayBuffer/text/json without a real Request). */
  [consumed]?: boolean;
}

type NodeRequest = Request & NodeRequestFields;

const BODYLESS = new Set(['GET', 'HEAD']);

/** Whether the message certainly carries no body (no Content-Length > 0, no Transfer-Encoding). */
export function hasNodeBody(req: IncomingMessage): boolean {
  const method = req.method ?? 'GET';
  return !BODYLESS.has(method) && (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0);
}

/**
 * The message's headers as Headers, filled from the raw headers on first need: `get` and `has`
 * read Node's parsed headers directly (a handler usually reads a few names and nothing else).
 * Node joins a repeated header with ", " as Headers does, except for the few it keeps the first of
 * (Host, Content-Type, Authorization…), where a request that repeats them is malformed anyway.
 */
class MessageHeaders extends LazyHeaders {
  readonly #req: IncomingMessage;

  constructor(req: IncomingMessage) {
    super();
    this.#req = req;
  }

  protected appendAll(append: (name: string, value: string) => void): void {
    const raw = this.#req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) append(raw[i]!, raw[i + 1]!);
  }

  protected read(name: string): string | null {
    const value = this.#req.headers[name];
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
  }
}

function headersOf(req: IncomingMessage): Headers {
  return new MessageHeaders(req);
}

/** The real Request, built once: the body streams from the message (with back-pressure). */
function realRequest(this: NodeRequest): Request {
  if (this[real] === undefined) {
    const req = this[incoming];
    const controller = (this[abort] ??= closeSignal(this[response]));
    const init: RequestInit & { duplex?: 'half' } = { method: req.method ?? 'GET', headers: this.headers, signal: controller.signal };
    if (hasNodeBody(req)) {
      // Already read straight from the message (arrayBuffer/text/json): nothing is left to stream.
      init.body = this[consumed] ? new Uint8Array(0) : bodyStream(req);
      init.duplex = 'half';
    }
    this[real] = new Request(this[url], init);
    // ... and the real Request says so, as one whose body was read would: bodyUsed, a body that cannot be read again.
    // eslint-disable-next-line @typescript-eslint/no-floating-promises -- reading a 0-byte body held in memory cannot fail
    if (this[consumed] && this[real].body !== null) void this[real].arrayBuffer();
  }
  return this[real];
}

const prototype: Record<string | symbol, unknown> = {};
Object.defineProperties(prototype, {
  method: {
    get(this: NodeRequest) {
      return this[incoming].method ?? 'GET';
    },
  },
  url: {
    get(this: NodeRequest) {
      return this[url];
    },
  },
  headers: {
    get(this: NodeRequest) {
      return (this[headersCache] ??= headersOf(this[incoming]));
    },
  },
});
for (const name of ['body', 'bodyUsed', 'cache', 'credentials', 'destination', 'integrity', 'mode', 'redirect', 'referrer', 'referrerPolicy', 'signal', 'keepalive', 'duplex']) {
  Object.defineProperty(prototype, name, {
    get(this: NodeRequest) {
      return (realRequest.call(this) as unknown as Record<string, unknown>)[name];
    },
  });
}
/**
 * The whole body read straight from the message: no web stream in between. Copied into an array of
 * its own, exactly as long as the body, so arrayBuffer() hands out that ArrayBuffer as it is (a
 * pooled Buffer would need ArrayBuffer.slice, a copy that cost more than the JSON parse of a token
 * creation's body in a profile of `POST /tokens`).
 */
function readMessage(request: NodeRequest): Promise<Uint8Array> {
  if (request[consumed]) return Promise.reject(new TypeError('Body is unusable: it has already been read'));
  request[consumed] = true;
  const req = request[incoming];
  if (!hasNodeBody(req)) return Promise.resolve(new Uint8Array(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.byteLength;
    });
    req.once('end', () => {
      const bytes = new Uint8Array(length);
      let offset = 0;
      for (const chunk of chunks) {
        bytes.set(chunk, offset);
        offset += chunk.byteLength;
      }
      resolve(bytes);
    });
    req.once('error', reject);
    req.once('close', () => {
      if (!req.complete) reject(new TypeError('The client closed the connection before the body was complete'));
    });
  });
}

Object.defineProperties(prototype, {
  arrayBuffer: {
    value(this: NodeRequest): Promise<ArrayBuffer> {
      if (this[real]) return this[real].arrayBuffer();
      return readMessage(this).then((bytes) => bytes.buffer as ArrayBuffer);
    },
  },
  text: {
    value(this: NodeRequest): Promise<string> {
      if (this[real]) return this[real].text();
      return readMessage(this).then((bytes) => Buffer.from(bytes.buffer, 0, bytes.byteLength).toString('utf8'));
    },
  },
  json: {
    value(this: NodeRequest): Promise<unknown> {
      return this.text().then((text) => JSON.parse(text) as unknown);
    },
  },
});
for (const name of ['blob', 'bytes', 'clone', 'formData']) {
  Object.defineProperty(prototype, name, {
    value(this: NodeRequest) {
      const request = realRequest.call(this) as unknown as Record<string, () => unknown>;
      return request[name]!.call(request);
    },
  });
}
Object.setPrototypeOf(prototype, Request.prototype);

/**
 * The Request of a Node message. `signal` aborts when `res` closes before it finished (the client
 * went away), also when that happened before anything read the signal.
 */
export function nodeRequest(req: IncomingMessage, res?: ServerResponse): Request {
  const request = Object.create(prototype) as NodeRequest;
  request[incoming] = req;
  request[url] = requestUrl(req);
  if (res !== undefined) request[response] = res;
  return request;
}

/**
 * The controller of a real Request's signal, watching the response from when the signal is first
 * needed: a request that never builds one (a token read) adds no listener, and one built after the
 * client left starts aborted.
 */
function closeSignal(res: ServerResponse | undefined): AbortController {
  const controller = new AbortController();
  if (res === undefined) return controller;
  if (res.destroyed) {
    if (!res.writableFinished) controller.abort();
    return controller;
  }
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller;
}

/** The absolute URL of the message: its Host (when it is a valid host) and its target. */
function requestUrl(req: IncomingMessage): string {
  const path = req.url ?? '/';
  // Absolute-form request targets (proxies) already carry scheme and host.
  if (/^https?:\/\//i.test(path)) return path;
  const scheme = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  const relative = path.startsWith('/') ? path : `/${path}`;
  const host = req.headers.host;
  // A host name or address with an optional port; anything else falls back to localhost (routing only uses the path).
  return `${scheme}://${host !== undefined && /^[A-Za-z0-9.\-[\]:]+$/.test(host) ? host : 'localhost'}${relative}`;
}

/** The request body as a web stream that pauses the socket while the reader is behind. */
function bodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let settled = false;
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;
  const onData = (chunk: Buffer) => {
    if (settled) return;
    controllerRef?.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if ((controllerRef?.desiredSize ?? 0) <= 0) req.pause();
  };
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
