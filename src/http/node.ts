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
import type { Logger as PinoLogger } from 'pino';
import * as v from 'valibot';
import { isLoggerLike, type Logger, toLogger, unexpectedErrorFields } from '../common/logger.js';
import { atTurnEnd } from '../common/turn-end.js';
import { PROBLEMS } from '../errors/problem.js';
import { hasNodeBody, nodeRequest } from './node-request.js';
import type { RequestInfo } from './client-address.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';
import { validationFromIssues } from '../validation/issues.js';

/** A Node http request listener. */
export type NodeListener = (req: IncomingMessage, res: ServerResponse) => void;

export interface NodeListenerOptions {
  /**
   * Write the responses finished during one turn of the event loop together, at the end of that
   * turn (default false). Under load a turn finishes many requests, and one burst of writes wakes
   * a waiting client process once instead of once per response: where waking the other CPU costs
   * more than reading a token, this takes a large share off the server's CPU per token read
   * (docs/performance.md, "Figures behind the code's choices"). Each response body is read whole before it is written, so
   * use it for handlers that answer complete bodies (createFetchHandler does; `tokenvault serve`
   * turns it on), not for long streams. Idle, a response waits only for the end of the current turn.
   */
  writeAtTurnEnd?: boolean;
  /**
   * Where a response that could not be written is logged (the handler answered something that is
   * not a Response): the client gets a bare 500, or a cut connection once the status is sent.
   * A Logger or a pino logger; default: JSON lines on stderr, as `createVault`'s.
   */
  logger?: Logger | PinoLogger;
}

const OptionsSchema = v.strictObject({
  writeAtTurnEnd: v.optional(v.boolean('must be a boolean')),
  logger: v.optional(v.custom<Logger | PinoLogger>(isLoggerLike, 'must have info, warn and error (a Logger or a pino logger)')),
});

/**
 * Converts a fetch handler into a Node request listener: the IncomingMessage becomes a Request
 * whose body streams (with back-pressure) and whose signal aborts when the client goes away; the
 * Response is written back into the ServerResponse (streamed, or whole at the end of the turn with
 * `writeAtTurnEnd`). It only converts: any `(Request) => Promise<Response>` works the same.
 */
export function toNodeListener(handler: (request: Request, info: RequestInfo) => Promise<Response>, options: NodeListenerOptions = {}): NodeListener {
  const parsed = v.safeParse(OptionsSchema, options ?? {});
  if (!parsed.success) throw validationFromIssues(parsed.issues, 'options');
  const batch = parsed.output.writeAtTurnEnd === true ? new TurnEndWriter() : null;
  const logger = toLogger(parsed.output.logger);
  return (req, res) => {
    batch?.arrived();
    // A handler may answer something that is not a Response; the request is then cut, never the process.
    serve(handler, req, res, batch).catch((error: unknown) => {
      logger.error('response could not be written', unexpectedErrorFields(error));
      if (res.headersSent) res.destroy();
      else res.writeHead(500, { 'content-length': '0', 'cache-control': 'no-store' }).end();
    });
  };
}

/** A response read whole, waiting for the end of the turn. */
interface Unwritten {
  /** Whether the handler answered before the whole request body arrived (413, 401…). */
  early: boolean;
  res: ServerResponse;
  status: number;
  /** Name, value, name, value… (writeHead's flat form), without Content-Length. */
  headers: string[];
  body: Uint8Array | null;
}

// The host's process.nextTick as it was when tokenvault loaded, as atTurnEnd is (turn-end.ts).
const afterMicrotasks = process.nextTick;

/**
 * The responses of one listener finished during the current turn, written together at its end.
 *
 * A response finished in the poll phase (where requests arrive) waits for the turn's immediates.
 * One finished while the immediates run (a creation answered by the group commit, which commits
 * at the end of the turn) would wait a whole turn more behind a setImmediate: its client's next
 * request then missed the commit of its peers' and got a commit, and an fsync, of its own. The
 * clients of a loaded server split into two groups that took turns, about 16 creations per commit
 * against 19 (docs/performance.md, "Stage by stage"). Such responses are written as soon as the
 * work that finished them settles (a tick after the microtasks drain), all of them together.
 */
class TurnEndWriter {
  #unwritten: Unwritten[] = [];
  /** Whether the loop is past this turn's poll phase, running its immediates. */
  #immediates = false;
  #watching = false;

  /** At each request (the poll phase): the next immediate of this turn marks the immediates' start. */
  arrived(): void {
    this.#immediates = false;
    if (this.#watching) return;
    this.#watching = true;
    atTurnEnd(this.#immediatesStart);
  }

  add(entry: Unwritten): void {
    if (this.#unwritten.length === 0) {
      if (this.#immediates) afterMicrotasks(this.#write);
      else atTurnEnd(this.#write);
    }
    this.#unwritten.push(entry);
  }

  // Queued at the turn's first request, so it runs before the immediates that request's work queues.
  readonly #immediatesStart = (): void => {
    this.#watching = false;
    this.#immediates = true;
  };

  readonly #write = (): void => {
    const batch = this.#unwritten;
    this.#unwritten = [];
    for (const { early, res, status, headers, body } of batch) {
      if (res.destroyed) continue;
      try {
        // Flat name, value pairs, as writeHead takes them.
        headers.push('content-length', String(body?.byteLength ?? 0));
        // Answered before the whole body arrived: close rather than read what remains.
        if (early) headers.push('connection', 'close');
        res.writeHead(status, headers);
        res.end(body ?? undefined);
      } catch {
        // A socket or header failure: there is nothing left to tell.
        if (!res.headersSent) {
          res.statusCode = 500;
          res.end();
        } else res.destroy();
      }
    }
  };
}

/**
 * The answer when the message's body was read before the vault got it: a body parser mounted ahead
 * of the listener (`express.json()`, Fastify's content-type parsers). Waiting for a body that has
 * already gone would never end; a parsed `req.body` is not used, since it is no longer the bytes
 * the client sent (idempotency compares those, and the vault's JSON rules are not the parser's).
 */
const BODY_ALREADY_READ = JSON.stringify({
  ...PROBLEMS.internal_error,
  status: 500,
  detail:
    'The request body was read before it reached the vault (a body parser such as express.json() runs ahead of it): ' +
    'mount the vault before any body parser, or on a path that no body parser handles (docs/embedding.md)',
});

async function serve(handler: (request: Request, info: RequestInfo) => Promise<Response>, req: IncomingMessage, res: ServerResponse, batch: TurnEndWriter | null): Promise<void> {
  if (hasNodeBody(req) && (req.readableDidRead || req.readableEnded)) {
    res.writeHead(500, { 'content-type': PROBLEM_CONTENT_TYPE, 'cache-control': 'no-store', 'content-length': String(Buffer.byteLength(BODY_ALREADY_READ)) });
    res.end(BODY_ALREADY_READ);
    return;
  }
  // The request's signal watches `res` itself, once something reads it: a listener added here for
  // every request cost more than the router's match on a token read.
  const request = nodeRequest(req, res);
  // Streamed writes wait on this signal too; batched ones are written whole.
  const controller = batch === null ? new AbortController() : null;
  if (controller !== null) {
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
    });
  }
  let response: Response;
  try {
    response = await handler(request, { clientAddress: req.socket.remoteAddress ?? null });
  } catch (error) {
    // A handler that throws, or a request Node accepted but fetch cannot represent (an invalid
    // header value): answer without detail.
    const status = error instanceof TypeError ? 400 : 500;
    response = new Response(null, { status });
  }
  if (controller !== null) return writeResponse(req, res, response, controller.signal);
  const early = !req.complete;
  let body: Uint8Array | null;
  try {
    // Read whole through arrayBuffer() alone: touching `body` would make a handler's lazy Response build its stream.
    const bytes = new Uint8Array(await response.arrayBuffer());
    body = bytes.byteLength === 0 ? null : bytes;
  } catch {
    res.destroy();
    return;
  }
  const headers: string[] = [];
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie' && name !== 'content-length') headers.push(name, value);
  });
  for (const cookie of response.headers.getSetCookie()) headers.push('set-cookie', cookie);
  batch!.add({ early, res, status: response.status, headers, body });
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
