/**
 * An origin is `http(s)://host[:port]` exactly (src/elements/origin.ts), so no
 * accepted one can carry a policy directive (`;`), a second value (`,`) or anything else into the
 * frame's `frame-ancestors` or an application's `allowed_origins` (docs/elements.md, "Origins").
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseOrigin } from '../../src/elements/origin.js';

/** Characters that would end a header value, a CSP directive or a source list, or quote one. */
const NEVER = /[;,\s"'`<>\\]/;

/** Strings built from origin-like pieces and the characters an attacker would slip in. */
const PIECES = [
  'http',
  'https',
  'HTTPS',
  ':',
  '//',
  '/',
  'shop',
  '.',
  'example',
  '-',
  'xn--',
  '127',
  '0',
  '1',
  '255',
  '256',
  '0x7f',
  '[',
  ']',
  '::',
  'ffff',
  ';',
  ',',
  ' ',
  '\t',
  '"',
  "'",
  '@',
  '?',
  '#',
  '%2e',
  '*',
  'sandbox',
  '443',
  '80',
  '65535',
  '65536',
  'K',
  'é',
];
const originLike = fc.array(fc.constantFrom(...PIECES), { maxLength: 14 }).map((parts) => parts.join(''));
const schemePrefixed = fc.tuple(fc.constantFrom('http://', 'https://', 'HTTP://'), originLike).map(([scheme, rest]) => scheme + rest);

/** Origins as browsers write them, generated from their parts. */
const host = fc.oneof(
  fc.domain().filter((name) => name.length <= 253),
  fc.ipV4(),
  fc.ipV6().map((address) => `[${address}]`),
);
const validOrigin = fc
  .tuple(fc.constantFrom('http', 'https'), host, fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }))
  .map(([scheme, name, port]) => `${scheme}://${name}${port === undefined ? '' : `:${port}`}`);

describe('parseOrigin: the one grammar of origins', () => {
  it('anything it accepts round-trips through new URL(x).origin unchanged, parses to itself, and holds none of ; , whitespace or quotes', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), originLike, schemePrefixed, validOrigin), (value) => {
        const origin = parseOrigin(value);
        if (origin === null) return;
        expect(new URL(origin).origin).toBe(origin);
        expect(parseOrigin(origin)).toBe(origin);
        expect(origin).not.toMatch(NEVER);
        expect(origin).toMatch(/^https?:\/\/[a-z0-9.\-[\]:]+$/);
      }),
      { numRuns: 3000 },
    );
  });

  it('accepts every origin a browser writes (DNS names, IPv4, bracketed IPv6, ports), as the URL parser serializes it', () => {
    fc.assert(
      fc.property(validOrigin, (value) => {
        expect(parseOrigin(value)).toBe(new URL(value).origin);
      }),
      { numRuns: 2000 },
    );
  });

  it('normalizes case and the default port, and compresses IPv6 as URL does', () => {
    expect(parseOrigin('HTTPS://Shop.Example:443')).toBe('https://shop.example');
    expect(parseOrigin('http://127.0.0.1:80')).toBe('http://127.0.0.1');
    expect(parseOrigin('http://[0:0:0:0:0:0:0:1]:8080')).toBe('http://[::1]:8080');
    expect(parseOrigin('http://localhost:3000')).toBe('http://localhost:3000');
    expect(parseOrigin('https://xn--bcher-kva.example')).toBe('https://xn--bcher-kva.example');
  });

  it('refuses directives, lists, paths and every form the URL parser would read otherwise than it is written', () => {
    const refused = [
      'https://shop.example;sandbox',
      'https://shop.example;',
      'https://shop.example,https://evil.example',
      'https://shop.example https://evil.example',
      "https://shop.example'",
      'https://shop.example"',
      'https://shop.example\t',
      ' https://shop.example',
      'https://shop.example/',
      'https://shop.example/pay',
      'https://shop.example?x',
      'https://shop.example#x',
      'https://u:p@shop.example',
      'https://*.shop.example',
      'null',
      'ftp://shop.example',
      'shop.example',
      'https://shop.example.',
      'https://shop_example.com',
      'https://-shop.example',
      'https://shop-.example',
      'https://ex%61mple.com',
      'https://bücher.example',
      'https://\u212Aa.example',
      `https://${'a'.repeat(64)}.example`,
      'http://0x7f.0.0.1',
      'http://010.0.0.1',
      'http://1.2.3',
      'http://256.0.0.1',
      'http://127.1',
      'http://a.0x7f',
      'http://shop.123',
      'https://[::1',
      'https://[zz::1]',
      'https://[::1]x',
      'https://shop.example:0',
      'https://shop.example:65536',
      'https://shop.example:0443',
      'https://shop.example:',
      'https://shop.example:1:2',
      '',
    ];
    for (const value of refused) expect([value, parseOrigin(value)]).toEqual([value, null]);
  });
});
