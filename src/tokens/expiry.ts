import { isValid, parse, parseISO } from 'date-fns';
import { ValidationError } from '../errors/errors.js';
import { formatIso } from '../common/time.js';

const FIELD = 'expires_at';
const FORMATS =
  "must be an ISO 8601 date-time with an offset ('2030-01-31T10:00:00Z', '2030-01-31T10:00:00+02:00'), " +
  "an ISO 8601 date ('2030-01-31'), 'M/D/YYYY h:mm:ss AM|PM ±hh:mm', 'M/D/YYYY h:mm:ss AM|PM' (UTC) or 'M/D/YYYY' (00:00 UTC)";

// ISO 8601 extended format: a date, optionally a time (minutes or seconds, optional fraction) and a
// zone. 'T' may be a space (RFC 3339 allows it); a missing zone means UTC (docs/tokens.md).
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:(Z)|([+-])(\d{2})(?::?(\d{2}))?)?)?$/i;
// The US shapes the README documents (Tokens): `M/D/YYYY`, optionally `h:mm:ss AM|PM`, optionally `±hh:mm`.
const US = /^(\d{1,2})\/(\d{1,2})\/(\d{4})(?:\s+(\d{1,2}):(\d{2}):(\d{2})\s*(AM|PM)(?:\s*([+-])(\d{2}):(\d{2}))?)?$/i;

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
  const ms = parseIsoText(text) ?? parseUsText(text);
  if (ms === null) throw ValidationError.field(FIELD, FORMATS);
  // The vault's clock may not be the caller's (a test vault's ManualClock): name the time it reads.
  if (ms <= now) throw ValidationError.field(FIELD, `must be in the future (the vault's clock reads ${formatIso(now)})`);
  return ms;
}

/**
 * The regular expressions only decide which shape the text has (and keep 2-digit years and stray
 * text out); date-fns does the parsing and the calendar checks. Every string is given an explicit
 * offset before it reaches date-fns (a missing zone means UTC), so the result never depends on the
 * machine's time zone.
 */
function parseIsoText(text: string): number | null {
  const m = ISO.exec(text);
  if (m === null) return null;
  const [, , , , hour, minute, second, fraction, z, sign, offsetHours, offsetMinutes] = m;
  checkTime(Number(hour ?? 0) <= 23 && Number(minute ?? 0) <= 59 && Number(second ?? 0) <= 59);
  if (sign !== undefined && !validOffset(offsetHours!, offsetMinutes ?? '00')) throw ValidationError.field(FIELD, BAD_OFFSET);
  // Sub-millisecond digits are truncated: epoch milliseconds is the stored precision.
  const base = text
    .toUpperCase()
    .replace(/[.,]\d+/, fraction === undefined ? '' : `.${fraction.slice(0, 3).padEnd(3, '0')}`)
    .replace(' ', 'T');
  const zoned = hour === undefined ? `${base}T00:00:00Z` : z === undefined && sign === undefined ? `${base}Z` : base;
  const date = parseISO(zoned);
  if (!isValid(date) || !sameCalendarDate(text, date, zoned)) throw ValidationError.field(FIELD, 'is not a valid calendar date');
  return date.getTime();
}

function parseUsText(text: string): number | null {
  const m = US.exec(text);
  if (m === null) return null;
  const [, month, day, year, hour, minute, second, meridiem, sign, offsetHours, offsetMinutes] = m;
  if (hour !== undefined) checkTime(Number(hour) >= 1 && Number(hour) <= 12 && Number(minute) <= 59 && Number(second) <= 59);
  if (sign !== undefined && !validOffset(offsetHours!, offsetMinutes!)) throw ValidationError.field(FIELD, BAD_OFFSET);
  const time = hour === undefined ? '12:00:00 AM' : `${hour}:${minute}:${second} ${meridiem!.toUpperCase()}`;
  const offset = sign === undefined ? '+00:00' : `${sign}${offsetHours}:${offsetMinutes}`;
  const date = parse(`${month}/${day}/${year} ${time} ${offset}`, 'M/d/yyyy h:mm:ss a xxx', new Date(0));
  if (!isValid(date)) throw ValidationError.field(FIELD, 'is not a valid calendar date');
  return date.getTime();
}

function checkTime(valid: boolean): void {
  if (!valid) throw ValidationError.field(FIELD, 'is not a valid time of day');
}

const BAD_OFFSET = 'has an invalid UTC offset; expected ±hh:mm with hh at most 23 and mm at most 59';

function validOffset(hours: string, minutes: string): boolean {
  return Number(hours) <= 23 && Number(minutes) <= 59;
}

/**
 * parseISO rolls impossible dates over (2030-02-30 becomes March 2); reject those by checking the
 * calendar date it produced, in the text's own offset, against the one written.
 */
function sameCalendarDate(text: string, date: Date, zoned: string): boolean {
  const [year, month, day] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
  const offsetMatch = /([+-])(\d{2}):?(\d{2})?$/.exec(zoned.slice(19));
  const offset = offsetMatch ? (offsetMatch[1] === '-' ? -1 : 1) * (Number(offsetMatch[2]) * 60 + Number(offsetMatch[3] ?? 0)) : 0;
  const local = new Date(date.getTime() + offset * 60_000);
  return local.getUTCFullYear() === year && local.getUTCMonth() + 1 === month && local.getUTCDate() === day;
}
