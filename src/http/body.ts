import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from '../errors/errors.js';
import { describeJsonError } from './json-position.js';
import type { BodyReader, ExchangeRequest } from './exchange.js';

/**
 * What a route accepts as its body:
 * - `json`: required, `application/json` or any `application/*+json`;
 * - `optional-json`: the same, but a request with an empty body is fine, whatever its Content-Type
 *   (e.g. `/react`, `/applications/{id}/regenerate`);
 * - `merge-patch`: required, `application/merge-patch+json` only (docs/tokens.md).
 */
export type BodyKind = 'json' | 'optional-json' | 'merge-patch';

/** A parsed body and its exact text (the text feeds the idempotency request hash). */
export interface JsonBody {
  text: string;
  value: unknown;
}

const decoder = new TextDecoder('utf-8', { fatal: true });
const EMPTY = new Uint8Array(0);

/**
 * Checks the Content-Type, reads the body without ever holding more than `maxBytes` (the declared
 * Content-Length is checked first, then the bytes are counted as they stream in) and parses it.
 * Returns null for an absent optional body. Error details never quote the body.
 */
export async function readJsonBody(request: ExchangeRequest, kind: BodyKind, maxBytes: number): Promise<JsonBody | null> {
  const contentType = request.header('content-type');
  const declared = request.header('content-length');
  if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > maxBytes) throw new PayloadTooLargeError(maxBytes);

  if (contentType === null || contentType.trim() === '' || !acceptable(contentType, kind)) {
    // An empty optional body is no body, whatever it is labelled: the Basis Theory SDK posts
    // `/applications/{id}/regenerate` with no body and `application/x-www-form-urlencoded`.
    if (kind === 'optional-json') {
      const bytes = request.hasBody ? await request.readBody(maxBytes) : EMPTY;
      if (bytes.byteLength === 0) return null;
    }
    throw mediaTypeError(kind);
  }

  const bytes = request.hasBody ? await request.readBody(maxBytes) : EMPTY;
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw ValidationError.field('body', 'is not valid UTF-8');
  }
  if (text.trim() === '') {
    if (kind === 'optional-json') return null;
    throw ValidationError.field('body', 'is required (a JSON document)');
  }
  try {
    return { text, value: JSON.parse(text) as unknown };
  } catch {
    throw ValidationError.field('body', describeJsonError(text));
  }
}

function mediaTypeError(kind: BodyKind): UnsupportedMediaTypeError {
  return new UnsupportedMediaTypeError(kind === 'merge-patch' ? 'Content-Type must be application/merge-patch+json (RFC 7386)' : 'Content-Type must be application/json');
}

/** `type/subtype` with an optional `charset=utf-8`; any other charset is refused (JSON is UTF-8, RFC 8259). */
function acceptable(header: string, kind: BodyKind): boolean {
  const [essence = '', ...parameters] = header.split(';');
  const mediaType = essence.trim().toLowerCase();
  for (const parameter of parameters) {
    const [name = '', value = ''] = parameter.split('=');
    if (name.trim().toLowerCase() === 'charset' && value.trim().replace(/^"|"$/g, '').toLowerCase() !== 'utf-8') return false;
  }
  if (kind === 'merge-patch') return mediaType === 'application/merge-patch+json';
  return mediaType === 'application/json' || /^application\/[a-z0-9!#$&^_.+-]+\+json$/.test(mediaType);
}

/** A BodyReader over a web stream: reads until the end, failing as soon as it passes the limit. */
export function webBodyReader(body: ReadableStream<Uint8Array> | null): BodyReader {
  return async (maxBytes) => {
    if (body === null) return EMPTY;
    const reader = body.getReader();
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch {
        // The client went away or the stream broke: the request is incomplete, not a server fault.
        throw ValidationError.field('body', 'could not be read completely');
      }
      const { done, value } = next;
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw new PayloadTooLargeError(maxBytes);
      }
      chunks.push(value);
    }
    return concat(chunks, total);
  };
}

/** Joins chunks (without copying a single one). */
export function concat(chunks: readonly Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 0) return EMPTY;
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
