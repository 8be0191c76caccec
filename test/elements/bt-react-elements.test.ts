import { build } from 'esbuild';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { BrowserContext } from 'playwright-core';
import { describeEachStore } from '../support/stores.js';
import { launchBrowser, startShop } from './browser-harness.js';
import { DOMAIN, NUMBER, READ_PCI, type Routed, api, foundAtRest, openPage, ownRequestsClean, publicApp, routeVault } from './bt-harness.js';

/*
 * Basis Theory's React Elements (`@basis-theory/react-elements` 2.17, over web-elements 2.17) in a
 * React page built by esbuild (test/elements/fixtures/bt-react-checkout.jsx): `useBasisTheory(key,
 * { customDomain })`, BasisTheoryProvider, CardElement, CardNumberElement, and a submit through
 * `bt.tokens.create`, against the vault on a second origin (docs/elements.md, "Basis Theory Web
 * Elements and React Elements"). One browser and one build for the file.
 */

let browser: Awaited<ReturnType<typeof launchBrowser>>;
let context: BrowserContext;
let shop: Awaited<ReturnType<typeof startShop>>;
const routed: Routed = { vault: null };
beforeAll(async () => {
  const bundle = await build({
    entryPoints: [new URL('./fixtures/bt-react-checkout.jsx', import.meta.url).pathname],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    jsx: 'automatic',
    minify: true,
    write: false,
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  browser = await launchBrowser();
  context = browser.context;
  shop = await startShop();
  shop.pages.set('/checkout.js', bundle.outputFiles[0]!.text);
  await routeVault(context, routed);
});
afterAll(async () => {
  await browser?.close();
  await shop?.close();
});

const page = (key: string) =>
  `<!doctype html><html><head><meta charset="utf-8"></head><body><div id="root"></div>
<script>window.CHECKOUT = ${JSON.stringify({ key, domain: DOMAIN })};</script><script src="/checkout.js"></script></body></html>`;

describeEachStore('Basis Theory React Elements in chromium', (store) => {
  it('a card typed into CardElement and a number into CardNumberElement become tokens on Pay; events carry no values; the page never sees the number; reveal with a session; another origin is refused', async () => {
    const vault = await store.vault();
    routed.vault = vault;
    const app = await publicApp(vault, [shop.url]);
    shop.pages.set('/react', page(app.key));
    const { page: tab, requests } = await openPage(context, `${shop.url}/react`);
    try {
      // Wait for the three elements' ready events (or a failure, which the assertion then shows).
      await tab.waitForFunction(() => (window as any).ready === 3 || (window as any).failure !== undefined);
      expect(await tab.evaluate(() => [(window as any).ready, (window as any).failure])).toEqual([3, undefined]);
      const card = tab.frameLocator('#card iframe').locator('input');
      await card.nth(0).pressSequentially(NUMBER);
      await card.nth(1).pressSequentially('1231');
      await card.nth(2).pressSequentially('123');
      await tab.frameLocator('#number iframe').locator('input').pressSequentially('5555555555554444');
      await tab.click('#pay');
      await tab.waitForFunction(() => /"number"|"error"/.test(document.querySelector('#result')!.textContent ?? ''));
      const result = JSON.parse((await tab.textContent('#result'))!);
      expect(result).toMatchObject({ card: { id: expect.any(String), type: 'card', metadata: { order: 'R-1' } }, number: { id: expect.any(String), type: 'card_number' } });
      expect(JSON.stringify(result)).not.toMatch(/4242424242424242|5555555555554444/);
      const reader = await vault.caller({ name: 'reader', permissions: ['token:read'], rules: READ_PCI as never });
      expect((await api(vault, 'GET', `/tokens/${result.card.id}`, reader.key)).data).toEqual({ number: NUMBER, expiration_month: 12, expiration_year: 2031, cvc: '123' });
      expect((await api(vault, 'GET', `/tokens/${result.number.id}`, reader.key)).data).toBe('5555555555554444');

      expect(await foundAtRest(vault, [NUMBER, '5555555555554444'])).toEqual([]);

      const seen = (await tab.evaluate(() => (window as any).seen)) as Record<string, unknown>[];
      expect(seen.at(-1)).toEqual({ type: 'change', empty: false, complete: true, valid: true, maskSatisfied: true, errors: [], cardBrand: 'mastercard' });
      expect(seen).toContainEqual(expect.objectContaining({ cardBrand: 'visa', complete: true }));
      for (const event of seen) expect(JSON.stringify(event)).not.toMatch(/\d{3}/);
      const clean = ownRequestsClean(tab, requests, NUMBER);
      expect(clean.own).toBeGreaterThan(0);
      expect(clean.toVault).toEqual([`https://${DOMAIN}`]);
      // Eight digits of the number, not four: the page holds a random port and random frame ids, where four can appear by chance.
      expect(await tab.evaluate(() => /4242 ?4242/.test(document.documentElement.outerHTML))).toBe(false);

      // Reveal into the third element with a session the backend authorized.
      const session = await tab.evaluate(() => (window as any).bt.sessions.create());
      await api(vault, 'POST', '/sessions/authorize', (await vault.caller({ name: 'backend', permissions: ['token:read'], rules: READ_PCI as never })).key, {
        nonce: session.nonce,
        rules: READ_PCI,
      });
      const retrieved = await tab.evaluate(
        async ([id, key]) => {
          const w = window as any;
          const token = await w.bt.tokens.retrieve(id, { apiKey: key });
          await w.refs.reveal.current.setValue(token.data);
          return token;
        },
        [result.number.id, session.sessionKey],
      );
      expect(retrieved.data).toEqual({ correlationId: expect.any(String), elementId: expect.any(String), path: '' });
      expect(await tab.frameLocator('#reveal iframe').locator('input').inputValue()).toBe('5555 5555 5555 4444');
    } finally {
      await tab.close();
    }

    await api(vault, 'PUT', `/applications/${app.id}`, vault.adminKey, { name: 'checkout', allowed_origins: ['https://shop.example'] });
    const { page: refused } = await openPage(context, `${shop.url}/react`);
    try {
      await refused.waitForFunction(() => (window as any).failure !== undefined);
      expect(await refused.evaluate(() => (window as any).failure)).toMatch(/does not allow browser elements on pages of "http:\/\/127\.0\.0\.1:\d+"/);
    } finally {
      await refused.close();
    }
  });
});
