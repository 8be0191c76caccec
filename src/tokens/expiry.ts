import { ValidationError } from '../errors.js';

const FIELD = 'expires_at';
const FORMATS =
  "must be an ISO 8601 date-time with an offset ('2030-01-31T10:00:00Z', '2030-01-31T10:00:00+02:00'), " +
  "an ISO 8601 date ('2030-01-31'), 'M/D/YYYY h:mm:ss AM|PM ±hh:mm', 'M/D/YYYY h:mm:ss AM|PM' (UTC) or 'M/D/YYYY' (00:00 UTC)";

// ISO 8601 extended format: a date, optionally a time (minutes or seconds, optional fraction) and a
// zone. 'T' may be a space (RFC 3339 allows it); a missing zone means UTC, as the spec says.
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:(Z)|([+-])(\d{2})(?::?(\d{2}))?)?)?$/i;
// The spec's US shapes: `M/D/YYYY`, optionally `h:mm:ss AM|PM`, optionally `±hh:mm`.
const US =
  /^(\d{1,2})\/(\d{1,2})\/(\d{4})(?:\s+(\d{1,2}):(\d{2}):(\d{2})\s*(AM|PM)(?:\s*([+-])(\d{2}):(\d{2}))?)?$/i;

interface Parts {
  year: number;
  month: number; // 1-12
  day: number;
  hour: number; // 0-23
  minute: number;
  second: number;
  millisecond: number;
  /** Minutes east of UTC. */
  offset: number;
}

/**
 * Parses a token's `expires_at` into epoch milliseconds. Accepted: ISO 8601 (`2030-01-31T10:00:00Z`,
 * `…+02:00`, no zone = UTC, date only = 00:00 UTC), `M/D/YYYY h:mm:ss AM|PM ±hh:mm`,
 * `M/D/YYYY h:mm:ss AM|PM` (UTC) and `M/D/YYYY` (00:00 UTC).
 * Throws a ValidationError on `expires_at` for a non-string, an unknown shape, an impossible
 * calendar date or time, or an instant at or before `now`.
 * @example parseExpiresAt('1/31/2030 10:00:00 PM +02:00', clock.now()) // Date.UTC(2030, 0, 31, 20)
 */
export function parseExpiresAt(value: unknown, now: number): number {
  if (typeof value !== 'string') throw ValidationError.field(FIELD, 'must be a string; ' + FORMATS);
  const text = value.trim();
  const parts = parseIso(text) ?? parseUs(text);
  if (parts === null) throw ValidationError.field(FIELD, FORMATS);
  const problem = rangeProblem(parts);
  if (problem !== null) throw ValidationError.field(FIELD, problem);
  const ms = toEpochMs(parts);
  if (ms <= now) throw ValidationError.field(FIELD, 'must be in the future');
  return ms;
}

/**
 * Formats epoch milliseconds as ISO 8601 with an explicit `+00:00` offset (the spec asks for "an
 * offset"; one fixed form keeps responses byte-stable).
 * @example formatIso(Date.UTC(2030, 0, 1)) // '2030-01-01T00:00:00.000+00:00'
 */
export function formatIso(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '+00:00');
}

function parseIso(text: string): Parts | null {
  const m = ISO.exec(text);
  if (m === null) return null;
  const [, y, mo, d, h, mi, s, frac, z, sign, oh, om] = m;
  // 'Z' and a missing zone both mean UTC.
  const offset = z === undefined && sign !== undefined ? offsetMinutes(sign, oh!, om ?? '00') : 0;
  return {
    year: Number(y),
    month: Number(mo),
    day: Number(d),
    hour: Number(h ?? 0),
    minute: Number(mi ?? 0),
    second: Number(s ?? 0),
    // Sub-millisecond digits are truncated: epoch milliseconds is the stored precision.
    millisecond: frac === undefined ? 0 : Number(frac.slice(0, 3).padEnd(3, '0')),
    offset,
  };
}

function parseUs(text: string): Parts | null {
  const m = US.exec(text);
  if (m === null) return null;
  const [, mo, d, y, h, mi, s, ampm, sign, oh, om] = m;
  let hour = 0;
  if (h !== undefined) {
    const h12 = Number(h);
    // 12-hour clock: 1..12 only; 12 AM is midnight, 12 PM is noon.
    if (h12 < 1 || h12 > 12) hour = Number.NaN;
    else hour = (h12 % 12) + (ampm!.toUpperCase() === 'PM' ? 12 : 0);
  }
  return {
    year: Number(y),
    month: Number(mo),
    day: Number(d),
    hour,
    minute: Number(mi ?? 0),
    second: Number(s ?? 0),
    millisecond: 0,
    offset: sign === undefined ? 0 : offsetMinutes(sign, oh!, om!),
  };
}

/** An offset's minutes east of UTC; NaN when its hours or minutes are out of range. */
function offsetMinutes(sign: string, hours: string, minutes: string): number {
  const hh = Number(hours);
  const mm = Number(minutes);
  if (hh > 23 || mm > 59) return Number.NaN;
  return (sign === '-' ? -1 : 1) * (hh * 60 + mm);
}

function rangeProblem(p: Parts): string | null {
  if (p.month < 1 || p.month > 12 || p.day < 1 || p.day > daysInMonth(p.year, p.month)) return 'is not a valid calendar date';
  if (!(p.hour >= 0 && p.hour <= 23) || p.minute > 59 || p.second > 59) return 'is not a valid time of day';
  if (Number.isNaN(p.offset)) return 'has an invalid UTC offset; expected ±hh:mm with hh at most 23 and mm at most 59';
  return null;
}

/** Days in a month of the proleptic Gregorian calendar (February follows the leap-year rule). */
function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

function toEpochMs(p: Parts): number {
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 1900-1999.
  date.setUTCFullYear(p.year, p.month - 1, p.day);
  date.setUTCHours(p.hour, p.minute, p.second, p.millisecond);
  return date.getTime() - p.offset * 60_000;
}
