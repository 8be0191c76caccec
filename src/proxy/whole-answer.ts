/**
 * A proxy with response transforms takes whole answers only (docs/proxies.md, Whole answers).
 * A transform reads the answer's text: a `mask` over a slice masks that slice on its own, so a
 * caller asking `Range: bytes=i-i+7` of a destination that honours it would read eight plain digits
 * at a time, and a compressed body, or a digest of the untransformed body, would carry the data
 * past the transform just as well. So on such a proxy:
 * - the request loses what asks for part of the answer or another form of it: `range` and
 *   `if-range` (a slice), `accept-encoding` (a compressed body), `accept-charset` (UTF-16 text,
 *   whose digits no expression matches), `if-none-match` and
 *   `if-modified-since` (a 304 that stands for a body the caller cached from elsewhere);
 *   `if-match` and `if-unmodified-since` stay, since they guard a write and answer no body;
 * - a 206, or a 2xx whose body is still content-encoded or in a UTF-16 or UTF-32 charset, is
 *   refused with a 502 and never transformed;
 * - the answer loses its validators and digests (`etag`, `content-md5`, `digest`, `content-digest`,
 *   `repr-digest`): computed over the untransformed body, a hash of a card with a few unknown
 *   digits is undone offline in a moment.
 */
import { BadGatewayError } from '../errors/errors.js';
import type { DestinationResponse } from './proxy-transport.js';

/** Request headers (lower-case) that ask for part of an answer or another form of it. */
const PARTIAL_REQUEST = ['range', 'if-range', 'accept-encoding', 'accept-charset', 'if-none-match', 'if-modified-since'];

/**
 * Charsets whose text of ASCII characters is still valid UTF-8 byte for byte but not the same text
 * (UTF-16 and UTF-32 put NULs between the digits): a transform reads such a body without error and
 * its expressions match nothing, so the card would pass unmasked.
 */
const WIDE_CHARSET = /^(?:utf-?(?:16|32)(?:le|be)?|ucs-?[24]|unicode(?:-?1-1)?|iso-10646-ucs-[24]|csunicode)$/;

/** Answer headers (lower-case) computed over the body as the destination sent it. */
const BODY_HASHES = new Set(['etag', 'content-md5', 'digest', 'content-digest', 'repr-digest']);

/** Removes from forwarded headers (lower-case names) what would ask for less than the whole answer. */
export function askWholeAnswer(headers: Record<string, string>): void {
  for (const name of PARTIAL_REQUEST) delete headers[name];
}

/**
 * The destination's answer as a transformed proxy passes it on: unchanged when `transformed` is
 * false; else without body hashes, and a BadGatewayError (502) for a 206 or an encoded 2xx body.
 */
export function wholeAnswer(transformed: boolean, answer: DestinationResponse): DestinationResponse {
  if (!transformed) return answer;
  if (answer.status === 206) {
    throw new BadGatewayError(
      'The destination answered with part of a body (206 Partial Content): this proxy transforms answers, so it passes on whole answers only; the vault did not ask for a range',
    );
  }
  const codings = answer.headers.filter(([name]) => name === 'content-encoding').flatMap(([, value]) => value.split(','));
  const encoded = codings.some((coding) => !['', 'identity'].includes(coding.trim().toLowerCase()));
  if (answer.status >= 200 && answer.status < 300 && encoded) {
    throw new BadGatewayError(
      'The destination answered with a compressed body (Content-Encoding): this proxy transforms answers, so it passes on uncompressed answers only; the vault did not ask for compression',
    );
  }
  const charsets = answer.headers
    .filter(([name]) => name === 'content-type')
    .flatMap(([, value]) => [...value.matchAll(/;\s*charset\s*=\s*"?([^";\s]*)/gi)].map((m) => m[1]!.toLowerCase()));
  if (answer.status >= 200 && answer.status < 300 && charsets.some((charset) => WIDE_CHARSET.test(charset))) {
    throw new BadGatewayError('The destination answered in a UTF-16 or UTF-32 charset: this proxy transforms answers, which it reads as UTF-8, so it passes on UTF-8 answers only');
  }
  return { ...answer, headers: answer.headers.filter(([name]) => !BODY_HASHES.has(name)) };
}
