import { describe, expect, it } from 'vitest';
import { parseExpiresAt } from '../../src/tokens/expiry.js';
import { formatIso } from '../../src/common/time.js';
import { errorsOf } from '../support/field-errors.js';

const NOW = Date.UTC(2026, 0, 1);
const parse = (value: unknown) => parseExpiresAt(value, NOW);

describe('parseExpiresAt', () => {
  it.each([
    // ISO 8601
    ['2030-01-31T10:00:00Z', Date.UTC(2030, 0, 31, 10)],
    ['2030-01-31t10:00:00z', Date.UTC(2030, 0, 31, 10)],
    ['2030-01-31T10:00:00.123Z', Date.UTC(2030, 0, 31, 10, 0, 0, 123)],
    ['2030-01-31T10:00:00.123456Z', Date.UTC(2030, 0, 31, 10, 0, 0, 123)],
    ['2030-01-31T10:00:00.5Z', Date.UTC(2030, 0, 31, 10, 0, 0, 500)],
    ['2030-01-31T10:00:00+02:00', Date.UTC(2030, 0, 31, 8)],
    ['2030-01-31T10:00:00-05:30', Date.UTC(2030, 0, 31, 15, 30)],
    ['2030-01-31T10:00:00+0200', Date.UTC(2030, 0, 31, 8)],
    ['2030-01-31T10:00:00+02', Date.UTC(2030, 0, 31, 8)],
    ['2030-01-31T10:00Z', Date.UTC(2030, 0, 31, 10)],
    ['2030-01-31 10:00:00Z', Date.UTC(2030, 0, 31, 10)],
    ['2030-01-31T10:00:00', Date.UTC(2030, 0, 31, 10)], // no zone: UTC
    ['2030-01-31', Date.UTC(2030, 0, 31)], // date only: 00:00 UTC
    ['2028-02-29', Date.UTC(2028, 1, 29)], // leap day
    ['2/29/2400', Date.UTC(2400, 1, 29)], // divisible by 400: leap
    // M/D/YYYY h:mm:ss AM|PM ±hh:mm
    ['1/31/2030 10:00:00 PM +02:00', Date.UTC(2030, 0, 31, 20)],
    ['01/31/2030 10:00:00 AM -05:00', Date.UTC(2030, 0, 31, 15)],
    ['1/31/2030 12:00:00 AM +00:00', Date.UTC(2030, 0, 31, 0)],
    ['1/31/2030 12:30:15 PM +00:00', Date.UTC(2030, 0, 31, 12, 30, 15)],
    ['1/31/2030 1:02:03 pm +05:30', Date.UTC(2030, 0, 31, 7, 32, 3)],
    // M/D/YYYY h:mm:ss AM|PM (UTC)
    ['1/31/2030 10:00:00 PM', Date.UTC(2030, 0, 31, 22)],
    ['12/1/2030 09:05:00 AM', Date.UTC(2030, 11, 1, 9, 5)],
    // M/D/YYYY (00:00 UTC)
    ['1/31/2030', Date.UTC(2030, 0, 31)],
    ['01/02/2030', Date.UTC(2030, 0, 2)],
    ['  1/31/2030  ', Date.UTC(2030, 0, 31)],
  ])('%s → exact instant', (text, expected) => {
    expect(parse(text)).toBe(expected);
  });

  it('does not depend on the local time zone', () => {
    const saved = process.env['TZ'];
    process.env['TZ'] = 'America/New_York';
    try {
      expect(parse('1/31/2030')).toBe(Date.UTC(2030, 0, 31));
      expect(parse('2030-01-31T10:00:00')).toBe(Date.UTC(2030, 0, 31, 10));
    } finally {
      if (saved === undefined) delete process.env['TZ'];
      else process.env['TZ'] = saved;
    }
  });

  it.each([
    ['not a string: number', Date.UTC(2030, 0, 1)],
    ['not a string: null', null],
    ['garbage', 'tomorrow'],
    ['empty', ''],
    ['two-digit year', '1/31/30'],
    ['24-hour clock in the US shape', '1/31/2030 13:00:00'],
    ['US shape without seconds', '1/31/2030 10:00 PM'],
    ['offset in the US shape without AM/PM', '1/31/2030 10:00:00 +02:00'],
    ['ISO basic format', '20300131T100000Z'],
    ['ISO week date', '2030-W05-1'],
    ['year and month only', '2030-01'],
  ])('rejects an unknown shape (%s)', (_label, value) => {
    expect(Object.keys(errorsOf(() => parse(value)))).toEqual(['expires_at']);
  });

  it.each(['2/30/2030', '2/29/2029', '2/29/2100', '4/31/2030', '13/1/2030', '0/1/2030', '1/32/2030', '2030-02-30', '2030-13-01', '2030-00-10'])(
    'rejects the impossible calendar date %s',
    (value) => {
      expect(errorsOf(() => parse(value))).toEqual({ expires_at: ['is not a valid calendar date'] });
    },
  );

  it.each(['1/31/2030 13:00:00 PM', '1/31/2030 0:00:00 AM', '1/31/2030 10:60:00 AM', '1/31/2030 10:00:60 AM', '2030-01-31T24:00:00Z', '2030-01-31T10:00:60Z'])(
    'rejects the impossible time %s',
    (value) => {
      expect(errorsOf(() => parse(value))).toEqual({ expires_at: ['is not a valid time of day'] });
    },
  );

  it.each(['2030-01-31T10:00:00+24:00', '2030-01-31T10:00:00+02:60', '1/31/2030 10:00:00 PM +25:00'])('rejects the offset of %s', (value) => {
    expect(errorsOf(() => parse(value))['expires_at']?.[0]).toContain('invalid UTC offset');
  });

  it('rejects a time at or before now', () => {
    expect(errorsOf(() => parseExpiresAt('2030-01-01T00:00:00Z', Date.UTC(2030, 0, 1)))).toEqual({
      expires_at: ["must be in the future (the vault's clock reads 2030-01-01T00:00:00.000+00:00)"],
    });
    expect(errorsOf(() => parse('1/1/2020'))).toEqual({ expires_at: [expect.stringMatching(/^must be in the future \(the vault's clock reads \d{4}-/)] });
    expect(parseExpiresAt('2030-01-01T00:00:00.001Z', Date.UTC(2030, 0, 1))).toBe(Date.UTC(2030, 0, 1) + 1);
  });

  it('handles four-digit years below 100 without mapping them to the 1900s', () => {
    expect(parseExpiresAt('0050-01-01', Date.UTC(-1, 0, 1) - 1e15)).toBe(new Date('0050-01-01T00:00:00Z').getTime());
  });

  it('does not echo the value in its messages', () => {
    expect(JSON.stringify(errorsOf(() => parse('secret-ish 1/31/2030')))).not.toContain('secret');
  });
});

describe('formatIso', () => {
  it('formats with an explicit +00:00 offset and milliseconds', () => {
    expect(formatIso(Date.UTC(2030, 0, 1))).toBe('2030-01-01T00:00:00.000+00:00');
    expect(formatIso(Date.UTC(2030, 11, 31, 23, 59, 59, 7))).toBe('2030-12-31T23:59:59.007+00:00');
  });
  it('round-trips through parseExpiresAt', () => {
    const ms = Date.UTC(2031, 5, 15, 8, 30, 0, 250);
    expect(parse(formatIso(ms))).toBe(ms);
  });
});
