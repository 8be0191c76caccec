/*
 * A web Response for a complete text body that is built only as far as it is read, the way
 * @hono/node-server's responses are: it is a Response (its prototype chain is Response.prototype, so
 * `instanceof Response` holds), `status` and `headers` come from what it was made with, `text()`,
 * `json()` and `arrayBuffer()` answer from the body text, and everything else (the body stream,
 * clone(), blob()…) comes from a real Response built on first need. In Node 20 a real Response with a
 * string body costs more to make and read than a token read does, many times over
 * (docs/performance.md, "Figures behind the code's choices").
 */

import { RecordHeaders } from './record-headers.js';

const state = Symbol('state');

interface ResponseState {
  readonly text: string | null;
  readonly status: number;
  readonly init: Record<string, string>;
  headers?: Headers;
  real?: Response;
  used: boolean;
}

type TextResponse = Response & { [state]: ResponseState };

const encoder = new TextEncoder();

function realResponse(this: TextResponse): Response {
  const s = this[state];
  s.real ??= new Response(s.used ? null : s.text, { status: s.status, headers: this.headers });
  return s.real;
}

/** Reads the body text once, as a real Response would (a second read is a TypeError). */
function consume(response: TextResponse): string | null {
  const s = response[state];
  if (s.used) throw new TypeError('Body is unusable: it has already been read');
  s.used = true;
  return s.text;
}

const prototype: Record<string | symbol, unknown> = {};
Object.defineProperties(prototype, {
  status: {
    get(this: TextResponse) {
      return this[state].status;
    },
  },
  ok: {
    get(this: TextResponse) {
      return this[state].status >= 200 && this[state].status < 300;
    },
  },
  statusText: { get: () => '' },
  type: { get: () => 'default' },
  url: { get: () => '' },
  redirected: { get: () => false },
  headers: {
    get(this: TextResponse) {
      return (this[state].headers ??= new RecordHeaders(this[state].init));
    },
  },
  bodyUsed: {
    get(this: TextResponse) {
      return this[state].real?.bodyUsed ?? this[state].used;
    },
  },
  body: {
    get(this: TextResponse) {
      return realResponse.call(this).body;
    },
  },
  text: {
    value(this: TextResponse): Promise<string> {
      if (this[state].real) return this[state].real.text();
      try {
        return Promise.resolve(consume(this) ?? '');
      } catch (error) {
        return Promise.reject(error);
      }
    },
  },
  json: {
    value(this: TextResponse): Promise<unknown> {
      return this.text().then((text) => JSON.parse(text) as unknown);
    },
  },
  arrayBuffer: {
    value(this: TextResponse): Promise<ArrayBuffer> {
      if (this[state].real) return this[state].real.arrayBuffer();
      try {
        // encode() answers a fresh array that fills its own buffer: no copy needed.
        return Promise.resolve(encoder.encode(consume(this) ?? '').buffer as ArrayBuffer);
      } catch (error) {
        return Promise.reject(error);
      }
    },
  },
});
for (const name of ['blob', 'bytes', 'clone', 'formData']) {
  Object.defineProperty(prototype, name, {
    value(this: TextResponse) {
      const response = realResponse.call(this) as unknown as Record<string, () => unknown>;
      return response[name]!.call(response);
    },
  });
}
Object.setPrototypeOf(prototype, Response.prototype);

/** A Response with this status, headers (lower-case names) and complete body text (null: none). */
export function textResponse(text: string | null, status: number, headers: Record<string, string>): Response {
  const response = Object.create(prototype) as TextResponse;
  response[state] = { text, status, init: headers, used: false };
  return response;
}
