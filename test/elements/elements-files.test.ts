import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { cardBrand, cardNumberState, cvcState, expirationState, formatCardNumber, formatExpiration, luhnValid, parseExpiration } from '../../src/elements/card-rules.js';
import { elementsIntegrity } from '../../src/http/elements-handler.js';
import { createFetchHandler } from '../../src/http/index.js';
import { createTestVault } from '../../src/testing/index.js';

/*
 * What the vault serves for Elements (docs/elements.md), without a browser: the files and their
 * cache headers, the frame page's policy and its refusals, the integrity hashes the docs publish,
 * and the card rules the frames apply. No store is involved: these answers never read one.
 */

function headersOf(response: Response): Record<string, string> {
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => (out[name] = value));
  return out;
}

const FRAME = '/elements/v1/frame?element=cardNumber&origin=http%3A%2F%2F127.0.0.1%3A3000&instance=0123456789abcdef01234567&id=89abcdef0123456789abcdef';

describe('Elements files', async () => {
  const vault = await createTestVault();
  const handler = createFetchHandler(vault);
  const get = (path: string, method = 'GET') => handler(new Request(`http://vault.test${path}`, { method }));

  it('serves the bundle (global and module) long-cached and immutable, loadable cross-origin with its integrity hash, and small', async () => {
    for (const name of ['elements.js', 'elements.mjs'] as const) {
      const response = await get(`/elements/v1/${name}`);
      expect(response.status).toBe(200);
      expect(headersOf(response)).toMatchObject({
        'content-type': 'text/javascript; charset=utf-8',
        'cache-control': 'public, max-age=31536000, immutable',
        'access-control-allow-origin': '*',
        'x-content-type-options': 'nosniff',
      });
      const body = await response.text();
      expect(body).not.toMatch(/\brequire\(|from ?["']/); // dependency-free: nothing imported
      expect(gzipSync(body).length).toBeLessThan(6 * 1024);
    }
    expect(await (await get('/elements/v1/elements.js')).text()).toMatch(/TokenVaultElements/);
    // The frame's own files are same-origin only.
    expect((await get('/elements/v1/frame.js')).headers.get('access-control-allow-origin')).toBeNull();
    expect((await get('/elements/v1/frame.css')).headers.get('content-type')).toBe('text/css; charset=utf-8');
  });

  it('docs/elements.md publishes the integrity hashes of the files this build serves', () => {
    const docs = readFileSync(new URL('../../docs/elements.md', import.meta.url), 'utf8');
    for (const name of ['elements.js', 'elements.mjs'] as const) {
      const hash = elementsIntegrity(name)!;
      expect(docs, `docs/elements.md must publish ${name}'s hash: ${hash}`).toContain(`| \`${name}\` | \`${hash}\` |`);
    }
  });

  it('the frame page may be embedded only by the page origin it names, loads and calls only its own origin, and is never cached', async () => {
    const response = await get(FRAME);
    expect(response.status).toBe(200);
    const csp = response.headers.get('content-security-policy')!;
    expect(csp.split('; ')).toEqual([
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "img-src 'none'",
      "font-src 'none'",
      "form-action 'none'",
      "base-uri 'none'",
      "object-src 'none'",
      'frame-ancestors http://127.0.0.1:3000',
    ]);
    expect(headersOf(response)).toMatchObject({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'content-type': 'text/html; charset=utf-8' });
    const html = await response.text();
    expect(html).not.toMatch(/<script>|\sstyle=|\son\w+=/); // no inline script or style: the policy would refuse them
  });

  it("frame-ancestors is the page origin and nothing more, an IPv6 page's included", async () => {
    const response = await get(FRAME.replace('http%3A%2F%2F127.0.0.1%3A3000', encodeURIComponent('http://[::1]:8080')));
    expect(response.status).toBe(200);
    const directives = response.headers.get('content-security-policy')!.split('; ');
    expect(directives.at(-1)).toBe('frame-ancestors http://[::1]:8080');
    expect(directives).toHaveLength(10);
  });

  it('refuses a frame address that is not one Elements makes, in its own words, and unknown files and methods', async () => {
    const cases: [string, RegExp][] = [
      [FRAME.replace('cardNumber', 'password'), /element must be one of/],
      [FRAME.replace('http%3A%2F%2F127.0.0.1%3A3000', 'javascript%3Aalert(1)'), /origin must be/],
      [FRAME.replace('http%3A%2F%2F127.0.0.1%3A3000', '*'), /origin must be/],
      [FRAME.replace('http%3A%2F%2F127.0.0.1%3A3000', 'http%3A%2F%2Fa.example%3B%20script-src%20*'), /origin must be/],
      // No space needed to add a directive (`;`) or a second source (`,`) to frame-ancestors.
      [FRAME.replace('http%3A%2F%2F127.0.0.1%3A3000', 'https%3A%2F%2Fshop.example%3Bsandbox'), /origin must be the embedding page's origin.*nothing else/],
      [FRAME.replace('http%3A%2F%2F127.0.0.1%3A3000', 'https%3A%2F%2Fshop.example%2Chttps%3A%2F%2Fevil.example'), /origin must be/],
      [FRAME.replace('http%3A%2F%2F127.0.0.1%3A3000', 'https%3A%2F%2Fshop.example%3B'), /origin must be/],
      // The frame posts to and names its page by the parameter as given: only the form browsers write.
      [FRAME.replace('http%3A%2F%2F127.0.0.1%3A3000', 'HTTPS%3A%2F%2FShop.example%3A443'), /written as browsers write it .*: https:\/\/shop\.example$/],
      [FRAME.replace('instance=0123456789abcdef01234567', 'instance=x'), /instance and id/],
      [`${FRAME}&key=tv_secret`, /Unknown query parameter: key/],
    ];
    for (const [path, message] of cases) {
      const response = await get(path);
      expect(response.status).toBe(400);
      expect(response.headers.get('content-security-policy')).toBeNull();
      expect(await response.text()).toMatch(message);
    }
    expect((await get('/elements/v1/other.js')).status).toBe(404);
    expect((await get('/elements/v2/elements.js')).status).toBe(404);
    const post = await get('/elements/v1/elements.js', 'POST');
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    expect(await (await get('/elements/v1/elements.js', 'HEAD')).text()).toBe('');
  });
});

describe('card rules of the frames', () => {
  it('detect brands, check Luhn and lengths, and format as typed', () => {
    expect(
      ['4242424242424242', '5555555555554444', '2223003122003222', '378282246310005', '6011111111111117', '3056930009020004', '3566002020360505', '6200000000000005', ''].map(
        cardBrand,
      ),
    ).toEqual(['visa', 'mastercard', 'mastercard', 'american-express', 'discover', 'diners-club', 'jcb', 'unionpay', 'unknown']);
    // The brands Basis Theory's Web Elements list beside those: ranges inside Visa's, Maestro's, Discover's and Mastercard's.
    expect(
      ['6062826786276634', '6370950000000005', '5066991111111118', '4011781111111111', '6500311111111111', '2200000000000004', '2205000000000000', '5067001111111111'].map(
        cardBrand,
      ),
    ).toEqual(['hipercard', 'hiper', 'elo', 'elo', 'elo', 'mir', 'unknown', 'elo']);
    expect([luhnValid('4242424242424242'), luhnValid('4242424242424241'), luhnValid('42a2')]).toEqual([true, false, false]);
    expect(formatCardNumber('4242424242424242999')).toBe('4242 4242 4242 4242 999');
    expect(formatCardNumber('37828224631000599')).toBe('3782 822463 10005');
    expect(cardNumberState('4242 4242 4242 4242')).toEqual({ empty: false, complete: true, valid: true, errors: [], cardBrand: 'visa' });
    expect(cardNumberState('4242 4242')).toMatchObject({ valid: false, errors: ['incomplete'] });
    expect(cardNumberState('4242424242424241')).toMatchObject({ valid: false, errors: ['invalid_luhn'] });
    expect(cardNumberState('')).toMatchObject({ empty: true, valid: false, errors: ['required'] });
  });

  it('read expiry dates as typed and refuse past or far months', () => {
    expect(['1', '12', '123', '1231', '4', '0430', '12/2031'].map(formatExpiration)).toEqual(['1', '12', '12 / 3', '12 / 31', '04', '04 / 30', '12 / 2031']);
    expect([parseExpiration('12 / 31'), parseExpiration('13/31'), parseExpiration('12/2031')]).toEqual([{ month: 12, year: 2031 }, null, { month: 12, year: 2031 }]);
    const now = { month: 6, year: 2030 };
    expect(expirationState('06 / 30', now)).toMatchObject({ valid: true });
    expect(expirationState('05 / 30', now)).toMatchObject({ valid: false, errors: ['expired'] });
    expect(expirationState('06 / 51', now)).toMatchObject({ valid: false, errors: ['too_far_ahead'] });
    expect(expirationState('06', now)).toMatchObject({ valid: false, errors: ['incomplete'] });
    expect([cvcState('123').valid, cvcState('1234').valid, cvcState('123', 'american-express').valid, cvcState('12').errors]).toEqual([true, true, false, ['incomplete']]);
  });
});

describe('docs/elements.md', () => {
  it("shows the example page's script as it runs in the suite (test/elements/browser.test.ts), with the vault URL and key filled in", () => {
    const docs = readFileSync(new URL('../../docs/elements.md', import.meta.url), 'utf8');
    const html = readFileSync(new URL('../../examples/elements/checkout.html', import.meta.url), 'utf8');
    const snippet = html.split('// elements-snippet:start\n')[1]!.split('// elements-snippet:end')[0]!;
    const shown = docs.split('<!-- elements-snippet: examples/elements/checkout.html -->\n```js\n')[1]!.split('```')[0]!;
    expect(shown).toBe(snippet.replaceAll('{{VAULT_URL}}', 'http://localhost:8080').replaceAll("'{{PUBLIC_KEY}}'", 'PUBLIC_KEY'));
  });
});
