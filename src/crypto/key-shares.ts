/**
 * Split knowledge of the local master key (docs/key-custody.md): Shamir shares from
 * `shamir-secret-sharing` (independently audited), each written as one line of text that names its
 * split and threshold and carries a checksum, so that a mistyped, truncated or foreign share is
 * refused clearly before anything is combined. The record of a split (`KeyShareSet`) holds no secret:
 * a key check value lets the vault tell the right key from a wrong one without a database read.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as v from 'valibot';
import { ValidationError } from '../errors/errors.js';

const PREFIX = 'tvshare1';
const CHECK_INFO = 'tokenvault/key-check/v1';

/** What `keys split` keeps beside the database instead of the key: enough to check shares, nothing to rebuild the key. */
export interface KeyShareSet {
  format: 'tokenvault-key-shares/1';
  /** Random id of this split: shares of another split (of the same key or not) are refused. */
  set: string;
  shares: number;
  threshold: number;
  /** HMAC-SHA256 of the set id under the master key (base64url): the key check value. */
  check: string;
}

export const KeyShareSetSchema = v.strictObject({
  format: v.literal('tokenvault-key-shares/1'),
  set: v.pipe(v.string(), v.regex(/^[0-9a-f]{8}$/)),
  shares: v.pipe(v.number(), v.integer(), v.minValue(2), v.maxValue(255)),
  threshold: v.pipe(v.number(), v.integer(), v.minValue(2), v.maxValue(255)),
  check: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{43}$/)),
});

/** A share read from its text: its split, the threshold it was made for, its x coordinate and bytes. */
export interface ParsedShare {
  set: string;
  threshold: number;
  x: number;
  bytes: Uint8Array;
}

/** Splits a 32-byte master key into `shares` lines, any `threshold` of which rebuild it. */
export async function splitMasterKey(key: Uint8Array, shares: number, threshold: number): Promise<{ lines: string[]; record: KeyShareSet }> {
  if (!Number.isInteger(shares) || shares < 2 || shares > 255) throw ValidationError.field('shares', 'must be a whole number from 2 to 255');
  if (!Number.isInteger(threshold) || threshold < 2 || threshold > shares)
    throw ValidationError.field('threshold', `must be a whole number from 2 to the number of shares (${shares})`);
  const { split } = await import('shamir-secret-sharing');
  const set = randomBytes(4).toString('hex');
  // The library takes a plain Uint8Array (not a Buffer): a copy, wiped once split.
  const secret = new Uint8Array(key);
  const parts = await split(secret, shares, threshold);
  secret.fill(0);
  const lines = parts.map((part) => encodeShare(set, threshold, part));
  for (const part of parts) part.fill(0);
  return { lines, record: { format: 'tokenvault-key-shares/1', set, shares, threshold, check: keyCheck(key, set) } };
}

/** Reads one share line; a ValidationError in our words otherwise (never quoting the text). */
export function parseShare(text: string): ParsedShare {
  const parts = text.trim().split('.');
  if (parts.length !== 5 || parts[0] !== PREFIX) throw malformed('it is not a tokenvault share (tvshare1.…, as `tokenvault keys split` printed it)');
  const [, set, thresholdText, body, sum] = parts as [string, string, string, string, string];
  if (!/^[0-9a-f]{8}$/.test(set) || !/^\d{1,3}$/.test(thresholdText) || !/^[A-Za-z0-9_-]+$/.test(body) || !/^[0-9a-f]{8}$/.test(sum)) {
    throw malformed('it is not a tokenvault share (tvshare1.…, as `tokenvault keys split` printed it)');
  }
  if (!timingSafeEqual(Buffer.from(checksum(`${PREFIX}.${set}.${thresholdText}.${body}`)), Buffer.from(sum))) {
    throw malformed('its checksum does not match: a character was changed or lost; copy the share again');
  }
  const decoded = Buffer.from(body, 'base64url');
  const threshold = Number(thresholdText);
  // The library takes a plain Uint8Array: a copy, and the decoded buffer (a slice of Node's shared
  // pool, reused later) is wiped rather than left holding the share.
  const bytes = new Uint8Array(decoded);
  decoded.fill(0);
  if (bytes.length !== 33 || threshold < 2) {
    bytes.fill(0);
    throw malformed('it has the wrong length');
  }
  return { set, threshold, x: bytes[32]!, bytes };
}

/** Rebuilds the key from shares already checked to be distinct and of one split. */
export async function combineShares(shares: readonly ParsedShare[]): Promise<Buffer> {
  const { combine } = await import('shamir-secret-sharing');
  // A view of the library's answer, not a copy: the caller's wipe then reaches the one copy of the key.
  const key = await combine(shares.map((s) => s.bytes));
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength);
}

/** Whether `key` is the key of this split (constant time). */
export function matchesKeyCheck(key: Uint8Array, record: KeyShareSet): boolean {
  return timingSafeEqual(Buffer.from(keyCheck(key, record.set)), Buffer.from(record.check));
}

function keyCheck(key: Uint8Array, set: string): string {
  return createHmac('sha256', key).update(`${CHECK_INFO}\u0000${set}`).digest('base64url');
}

// '.' separates the parts: base64url never holds one.
function encodeShare(set: string, threshold: number, part: Uint8Array): string {
  const head = `${PREFIX}.${set}.${threshold}.${Buffer.from(part).toString('base64url')}`;
  return `${head}.${checksum(head)}`;
}

function checksum(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8);
}

function malformed(why: string): ValidationError {
  return ValidationError.field('share', `is refused: ${why}`);
}
