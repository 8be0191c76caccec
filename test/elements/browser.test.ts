import { afterAll, beforeAll, expect, it } from 'vitest';
import type { BrowserContext, Page, Request as PwRequest } from 'playwright-core';
import { elementsIntegrity } from '../../src/http/elements-handler.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { main } from '../../examples/elements-checkout.js';
import { launchBrowser, merchantPage, startOrigins } from './browser-harness.js';

/*
 * Elements in a real browser (docs/elements.md): the merchant's page on 127.0.0.1, the vault on
 * localhost. One browser for the file; each test opens a page or two.
 */

const NUMBER = '4242424242424242';
const READ_PCI = [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }];

let browser: Awaited<ReturnType<typeof launchBrowser>>;
let context: BrowserContext;
beforeAll(async () => {
  browser = await launchBrowser();
  context = browser.context;
});
afterAll(async () => browser?.close());

const integrity = elementsIntegrity('elements.js')!;

describeEachStore('Elements in chromium', (store) => {
  async function setup(publicApp: Record<string, unknown> = {}) {
    const vault: TestVault = await store.vault();
    const origins = await startOrigins(vault);
    const app = await call(vault, origins.vaultUrl, 'POST', '/applications', vault.adminKey, {
      name: 'checkout',
      type: 'public',
      permissions: ['token:create'],
      allowed_origins: [origins.shopUrl],
      ...publicApp,
    });
    return { vault, origins, app: app as { id: string; key: string } };
  }

  async function open(s: Awaited<ReturnType<typeof setup>>, key: string, script: string): Promise<{ page: Page; requests: PwRequest[] }> {
    s.origins.pages.set('/checkout', merchantPage(s.origins.vaultUrl, integrity, key, script));
    const page = await context.newPage();
    const requests: PwRequest[] = [];
    page.on('request', (request) => requests.push(request));
    await page.goto(`${s.origins.shopUrl}/checkout`);
    return { page, requests };
  }

  it('a card typed into the frames is tokenized from the page: the token holds the typed data, the page sees neither the values nor the frames, change events carry states only', async () => {
    const s = await setup();
    const { page, requests } = await open(
      s,
      s.app.key,
      `window.number = await mount('cardNumber', '#number', { placeholder: 'Card number', style: { base: { color: 'rgb(10, 20, 30)', fontSize: '15px' }, invalid: { color: 'red' } } });
       window.expiry = await mount('cardExpirationDate', '#expiry');
       window.cvc = await mount('cardVerificationCode', '#cvc');`,
    );
    try {
      await page.evaluate(() => (window as any).ready);
      const field = (selector: string) => page.frameLocator(`${selector} iframe`).locator('input');
      await field('#number').pressSequentially(NUMBER);
      await field('#expiry').pressSequentially('1231');
      await field('#cvc').pressSequentially('123');
      // Formatting and autocomplete happen inside the frame.
      expect(await field('#number').inputValue()).toBe('4242 4242 4242 4242');
      expect(await field('#expiry').inputValue()).toBe('12 / 31');
      expect(await field('#number').getAttribute('autocomplete')).toBe('cc-number');
      expect(await field('#expiry').getAttribute('autocomplete')).toBe('cc-exp');
      expect(await field('#cvc').getAttribute('autocomplete')).toBe('cc-csc');
      expect(await field('#number').evaluate((input) => getComputedStyle(input).color)).toBe('rgb(10, 20, 30)');

      const answer = await page.evaluate(async () => {
        const w = window as any;
        return w.elements.tokens.create({
          type: 'card',
          data: { number: w.number, expiration_month: w.expiry.month(), expiration_year: w.expiry.year(), cvc: w.cvc },
          metadata: { order: 'A-1' },
        });
      });
      expect(answer).toMatchObject({ id: expect.any(String), type: 'card', metadata: { order: 'A-1' } });
      expect(JSON.stringify(answer)).not.toContain(NUMBER);

      // The token holds exactly what was typed.
      const reader = await s.vault.caller({ name: 'reader', permissions: ['token:read'], rules: READ_PCI as never });
      const stored = await call(s.vault, s.origins.vaultUrl, 'GET', `/tokens/${(answer as { id: string }).id}`, reader.key);
      expect((stored as { data: unknown }).data).toEqual({ number: NUMBER, expiration_month: 12, expiration_year: 2031, cvc: '123' });

      // The page's script cannot reach into the frames (another origin).
      const reach = await page.evaluate(() => {
        const frame = document.querySelector('#number iframe') as HTMLIFrameElement;
        let error = '';
        try {
          void (frame.contentWindow as Window).document;
        } catch (e) {
          error = (e as Error).name;
        }
        return { document: frame.contentDocument === null, error, html: /4242 ?4242/.test(document.documentElement.outerHTML) };
      });
      expect(reach).toEqual({ document: true, error: 'SecurityError', html: false });

      // None of the page's own requests carries the number; the frames' request to the vault does.
      const own = requests.filter((r) => r.frame() === page.mainFrame());
      expect(own.length).toBeGreaterThan(0);
      // Eight digits of the number, not four: the addresses carry a random port, where four can appear by chance.
      for (const r of own) expect(`${r.url()} ${r.postData() ?? ''} ${JSON.stringify(r.headers())}`).not.toMatch(/4242 ?4242/);
      const toVault = requests.filter((r) => r.frame() !== page.mainFrame() && r.method() === 'POST');
      expect(toVault.map((r) => [new URL(r.url()).origin, r.postDataJSON()?.data?.number])).toEqual([[s.origins.vaultUrl, NUMBER]]);

      // Change events: states and brand, never values.
      const seen = await page.evaluate(() => (window as any).seen);
      const last = seen.events.filter((e: { elementType: string }) => e.elementType === 'cardNumber').at(-1);
      expect(last).toEqual({ empty: false, complete: true, valid: true, errors: [], cardBrand: 'visa', elementType: 'cardNumber' });
      for (const event of seen.events) expect(Object.keys(event).sort()).toEqual(expect.arrayContaining(['complete', 'empty', 'errors', 'valid']));
      expect(JSON.stringify(seen.events)).not.toMatch(/\d{3}/);
      expect(seen.events.some((e: { valid: boolean; errors: string[] }) => !e.valid && e.errors.includes('incomplete'))).toBe(true);
      // mount → ready, measured in the page (docs/elements.md reports it).
      console.info(`[elements] ${store.name}: mount→ready ms ${seen.readyMs.map((ms: number) => ms.toFixed(1)).join(', ')}`);

      // An invalid card never leaves: a wrong Luhn digit is refused by the frames with a code, without data.
      await field('#number').fill('');
      await field('#number').pressSequentially('4242424242424241');
      const refused = await page.evaluate(async () => {
        const w = window as any;
        try {
          await w.elements.tokenize({ card: { type: 'card', data: { number: w.number, expiration_month: w.expiry.month(), expiration_year: w.expiry.year(), cvc: w.cvc } } });
          return null;
        } catch (e) {
          return { name: (e as Error).name, code: (e as { code: string }).code, message: (e as Error).message };
        }
      });
      expect(refused).toEqual({ name: 'ElementsError', code: 'invalid_element', message: 'The cardNumber element is not valid: invalid_luhn' });

      // The page may not place a value outside a token's data (metadata is stored in the clear and
      // echoed back), nor choose a mask that would show it back.
      await field('#number').fill('');
      await field('#number').pressSequentially(NUMBER);
      const misplaced = await page.evaluate(async () => {
        const w = window as any;
        const outcome = async (body: unknown) =>
          w.elements.tokens.create(body).then(
            () => 'created',
            (e: { code: string }) => e.code,
          );
        return [
          await outcome({ type: 'token', data: 'x', metadata: { leak: w.number } }),
          await outcome({ type: 'token', data: { n: w.number }, mask: '{{ data.n | slice: 0, 8 }}' }),
          // A key named data elsewhere is not the token's data (metadata is shown to a mask-only reader).
          await outcome({ type: 'token', data: 'x', metadata: { data: w.number } }),
          await outcome({ type: 'token', data: { n: w.number }, search_indexes: ['{{ data.n }}'] }),
          await w.elements.tokenize({ a: { type: 'token', data: 'x', metadata: { data: w.number } } }).then(
            () => 'created',
            (e: { code: string }) => e.code,
          ),
        ];
      });
      expect(misplaced).toEqual(['element_outside_data', 'unsupported_field', 'element_outside_data', 'unsupported_field', 'element_outside_data']);
    } finally {
      await page.close();
      await s.origins.close();
    }
  });

  it('reveal shows a token inside the frame only, and only with an authorized session; a page on an origin the application does not allow is refused', async () => {
    const s = await setup();
    const backend = await s.vault.caller({
      name: 'backend',
      permissions: ['token:create', 'token:read'],
      rules: [...READ_PCI, { priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:create'] }] as never,
    });
    const token = (await call(s.vault, s.origins.vaultUrl, 'POST', '/tokens', backend.key, { type: 'card_number', data: NUMBER })) as { id: string };
    // The merchant's backend makes the session with the public key and authorizes it.
    const session = (await call(s.vault, s.origins.vaultUrl, 'POST', '/sessions', s.app.key)) as { session_key: string; nonce: string };
    const reveal = `try { window.shown = await mount('cardNumber', '#reveal'); await window.shown.setValueRef(${JSON.stringify(token.id)}); window.outcome = 'shown'; }
      catch (e) { window.outcome = { code: e.code, message: e.message }; }`;

    // Not yet authorized: the frame refuses to be ready.
    let { page } = await open(s, session.session_key, reveal);
    expect(await page.evaluate(async () => (await (window as any).ready, (window as any).outcome))).toEqual({
      code: 'authentication_error',
      message: expect.stringMatching(/not authorized yet/),
    });
    await page.close();
    // The public key itself may not read.
    ({ page } = await open(s, s.app.key, reveal));
    expect(await page.evaluate(async () => (await (window as any).ready, (window as any).outcome))).toMatchObject({ code: 'authorization_error' });
    await page.close();

    await call(s.vault, s.origins.vaultUrl, 'POST', '/sessions/authorize', backend.key, { nonce: session.nonce, rules: READ_PCI });
    ({ page } = await open(s, session.session_key, reveal));
    try {
      expect(await page.evaluate(async () => (await (window as any).ready, (window as any).outcome))).toBe('shown');
      expect(await page.frameLocator('#reveal iframe').locator('input').inputValue()).toBe('4242 4242 4242 4242');
      expect(await page.evaluate(() => document.querySelector<HTMLIFrameElement>('#reveal iframe')!.contentDocument)).toBeNull();
      expect(JSON.stringify(await page.evaluate(() => (window as any).seen))).not.toContain('4242');
    } finally {
      await page.close();
    }

    // Another page origin: the application allows only the shop.
    await call(s.vault, s.origins.vaultUrl, 'PUT', `/applications/${s.app.id}`, s.vault.adminKey, { name: 'checkout', allowed_origins: ['https://shop.example'] });
    ({ page } = await open(
      s,
      s.app.key,
      `try { await mount('cardNumber', '#number'); window.outcome = 'mounted'; } catch (e) { window.outcome = { code: e.code, message: e.message }; }`,
    ));
    try {
      expect(await page.evaluate(async () => (await (window as any).ready, (window as any).outcome))).toEqual({
        code: 'authorization_error',
        message: expect.stringMatching(/does not allow browser elements on pages of "http:\/\/127\.0\.0\.1:\d+"/),
      });
      // And a frame whose address names another page origin is not displayed here at all (frame-ancestors).
      const blocked = await page.evaluate(async (vaultUrl) => {
        const frame = document.createElement('iframe');
        frame.src = `${vaultUrl}/elements/v1/frame?element=text&origin=https%3A%2F%2Fshop.example&instance=${'a'.repeat(24)}&id=${'b'.repeat(24)}#{}`;
        const loaded = new Promise((resolve) => frame.addEventListener('load', resolve));
        document.body.appendChild(frame);
        await loaded;
        return true;
      }, s.origins.vaultUrl);
      expect(blocked).toBe(true);
      // Chromium replaces a frame its ancestors may not embed with an error page: the frame made for
      // this page's origin is there, the one naming the shop's never shows its document.
      const urls = page.frames().map((f) => f.url());
      expect(urls).toHaveLength(3);
      expect(urls[1]).toContain('origin=http%3A%2F%2F127.0.0.1');
      expect(urls.some((url) => url.includes('origin=https%3A%2F%2Fshop.example'))).toBe(false);
    } finally {
      await page.close();
      await s.origins.close();
    }
  });
});

describeEachStore('Elements example in chromium', (store) => {
  it("examples/elements-checkout.ts: the docs' ES-module snippet on a page of its own origin tokenizes a typed card", async () => {
    const vault: TestVault = await store.vault();
    const origins = await startOrigins(vault);
    const example = await main(() => undefined, { vaultUrl: origins.vaultUrl, adminKey: vault.adminKey, port: 0 });
    const page = await context.newPage();
    try {
      await page.goto(example.url);
      const field = (selector: string) => page.frameLocator(`${selector} iframe`).locator('input');
      await field('#card-number').pressSequentially('378282246310005');
      await field('#card-expiration').pressSequentially('0430');
      await field('#card-cvc').pressSequentially('1234');
      await expect.poll(() => page.textContent('#brand')).toBe('american-express');
      await page.click('#pay');
      await expect.poll(() => page.textContent('#result')).toMatch(/"id"/);
      const shown = JSON.parse((await page.textContent('#result'))!);
      expect(JSON.stringify(shown)).not.toContain('378282246310005');
      const reader = await vault.caller({ name: 'reader', permissions: ['token:read'], rules: READ_PCI as never });
      const stored = (await call(vault, origins.vaultUrl, 'GET', `/tokens/${shown.id}`, reader.key)) as { data: unknown };
      expect(stored.data).toEqual({ number: '378282246310005', expiration_month: 4, expiration_year: 2030, cvc: '1234' });
    } finally {
      await page.close();
      await example.close();
      await origins.close();
    }
  });
});

/** A call to the vault's API from the test (the merchant's backend). */
async function call(_vault: TestVault, vaultUrl: string, method: string, path: string, key: string, body?: unknown): Promise<unknown> {
  const response = await fetch(vaultUrl.replace('localhost', '127.0.0.1') + path, {
    method,
    headers: { 'SVC-API-KEY': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text.length === 0 ? null : JSON.parse(text);
}
