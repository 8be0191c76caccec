/**
 * Compact forms of a token's keyed hashes, as both stores keep them. Fingerprints and blind index
 * values are base64url HMAC-SHA256 (43 characters); stored as their 32 bytes they take 33 bytes
 * in a row or an index entry instead of 44. A value that is not such a string (a store's caller may
 * give any text) keeps its text behind a tag byte, so the encoding stays one-to-one and a lookup
 * encodes its term the same way.
 */

const HASH_BYTES = 32;
const HASH_TEXT = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;
/** Tag of a text value whose encoding is not 32 bytes long. */
const TEXT = 0x02;
/** Tag of a text value that would otherwise encode to 32 bytes (read as a hash): two tag bytes. */
const TEXT_32 = 0x03;

/** The stored form of a fingerprint or blind index value. */
export function hashBytes(value: string): Buffer {
  if (value.length === 43 && HASH_TEXT.test(value)) return Buffer.from(value, 'base64url');
  const text = Buffer.from(value, 'utf8');
  return text.length + 1 === HASH_BYTES ? Buffer.concat([Buffer.from([TEXT_32, TEXT_32]), text]) : Buffer.concat([Buffer.from([TEXT]), text]);
}

/** The value of a stored form written by hashBytes. */
export function hashText(bytes: Uint8Array): string {
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length === HASH_BYTES) return buffer.toString('base64url');
  return buffer.toString('utf8', buffer[0] === TEXT_32 ? 2 : 1);
}

export function nullableHashBytes(value: string | null | undefined): Buffer | null {
  return value === null || value === undefined ? null : hashBytes(value);
}

export function nullableHashText(bytes: Uint8Array | null): string | null {
  return bytes === null ? null : hashText(bytes);
}

/** Tag of a hash list stored as consecutive 32-byte values. */
const LIST_OF_HASHES = 0x01;
/** Tag of a hash list stored as JSON text (some value is not a base64url HMAC). */
const LIST_AS_JSON = 0x02;

/** A token's blind index values in one column: null for none (the common case). */
export function hashListBytes(values: readonly string[] | null | undefined): Buffer | null {
  if (values === null || values === undefined || values.length === 0) return null;
  if (values.every((value) => value.length === 43 && HASH_TEXT.test(value))) {
    return Buffer.concat([Buffer.from([LIST_OF_HASHES]), ...values.map((value) => Buffer.from(value, 'base64url'))]);
  }
  return Buffer.concat([Buffer.from([LIST_AS_JSON]), Buffer.from(JSON.stringify(values), 'utf8')]);
}

export function hashListText(bytes: Uint8Array | null): string[] {
  if (bytes === null) return [];
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer[0] === LIST_AS_JSON) return JSON.parse(buffer.toString('utf8', 1)) as string[];
  const values: string[] = [];
  for (let at = 1; at + HASH_BYTES <= buffer.length; at += HASH_BYTES) values.push(buffer.toString('base64url', at, at + HASH_BYTES));
  return values;
}
