/**
 * Compressed request bodies (docs/proxies.md, Compressed bodies): a body the vault reads (for `{{ }}`
 * expressions or request transforms) under `Content-Encoding: gzip | deflate | br` is decompressed
 * first, else expressions would be looked for in compressed bytes and forwarded unreplaced. The
 * decompressed size is capped as it is produced (zlib's `maxOutputLength` stops the stream at the
 * limit), so a small bomb never grows past the body limit in memory. What is sent on is the body as
 * the vault left it, uncompressed: Content-Encoding and Content-Length go (the transport sets the
 * length). An encoding the vault cannot read is a 415, and nothing is sent.
 */
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate, inflateRaw } from 'node:zlib';
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from '../errors/errors.js';
import type { ProxyMessage } from './proxy-message.js';

type Decoder = (input: Uint8Array, options: { maxOutputLength: number }) => Promise<Buffer>;

const gunzipAsync = promisify(gunzip) as Decoder;
const inflateAsync = promisify(inflate) as Decoder;
const inflateRawAsync = promisify(inflateRaw) as Decoder;
const brotliAsync = promisify(brotliDecompress) as Decoder;

/** HTTP's `deflate` is zlib-wrapped, but some clients send raw deflate: both are read. */
const inflateEither: Decoder = async (input, options) => {
  try {
    return await inflateAsync(input, options);
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw error;
    return inflateRawAsync(input, options);
  }
};

const DECODERS: Record<string, Decoder> = { gzip: gunzipAsync, 'x-gzip': gunzipAsync, deflate: inflateEither, br: brotliAsync };

/**
 * The most codings one body may name. Each one undone may produce up to the body limit, so the
 * work of a body is this many times the limit: without a bound, thousands of stored-block gzip
 * layers under one 10 KB header held zlib for seconds per unauthenticated request (docs/proxies.md).
 */
export const MAX_CONTENT_CODINGS = 3;

/** The default limit of a decompressed body in-process: the HTTP handler's default `maxBodyBytes`. */
export const DEFAULT_DECODED_BODY_BYTES = 1_048_576;

/**
 * The message with its body decompressed (codings undone last to first), at most `maxBytes` of it;
 * unchanged when it is not encoded. PayloadTooLargeError (413) past the limit,
 * UnsupportedMediaTypeError (415) for an unknown coding, ValidationError (400) for corrupt data.
 */
export async function decodedMessage(message: ProxyMessage, maxBytes: number): Promise<ProxyMessage> {
  const applied = codings(message.headers['content-encoding']);
  if (applied.length === 0 || message.body === null || message.body.byteLength === 0) return message;
  const unknown = applied.find((coding) => DECODERS[coding] === undefined);
  if (unknown !== undefined) {
    throw new UnsupportedMediaTypeError(
      `The request body's Content-Encoding '${unknown.slice(0, 32)}' is not one the proxy can read: send the body uncompressed, or as gzip, deflate or br`,
    );
  }
  if (applied.length > MAX_CONTENT_CODINGS) {
    throw new UnsupportedMediaTypeError(
      `The request body names ${applied.length} Content-Encodings: the proxy undoes at most ${MAX_CONTENT_CODINGS}; send it uncompressed, or compressed once`,
    );
  }
  let body: Uint8Array = message.body;
  for (const coding of [...applied].reverse()) {
    try {
      body = await DECODERS[coding]!(body, { maxOutputLength: maxBytes });
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new PayloadTooLargeError(maxBytes, `The request body decompresses (Content-Encoding ${coding}) to more than the limit of ${maxBytes} bytes: send a smaller body`);
      }
      throw ValidationError.field('body', `is not valid ${coding} data (its Content-Encoding says ${coding}): send it uncompressed or encoded as it says`);
    }
  }
  const headers = { ...message.headers };
  delete headers['content-encoding'];
  delete headers['content-length'];
  return { headers, body };
}

/** The codings a Content-Encoding header names, in the order applied, `identity` left out. */
function codings(header: string | undefined): string[] {
  if (header === undefined) return [];
  return header
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
}
