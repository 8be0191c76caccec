import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { createFetchHandler } from '../../src/http/index.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { launchBrowser, startShop } from './browser-harness.js';
import { DOMAIN, LOADER, NUMBER, READ_PCI, type Routed, api, foundAtRest, openPage, ownRequestsClean, publicApp, routeVault } from './bt-harness.js';

/*
 * Basis Theory's Web Elements 2.17 (the real `@basis-theory/web-elements` loader) on a merchant's
 * page, the vault on a second origin under `customDomain` (docs/elements.md, "Basis Theory Web
 * Elements and React Elements"). One browser for the file; each test opens a page or two.
 */

let browser: Awaited<ReturnType<typeof launchBrowser>>;
let context: BrowserContext;
let shop: Awaited<ReturnType<typeof startShop>>;
const routed: Routed = { vault: null };
beforeAll(async () => {
  browser = await launchBrowser();
  context = browser.context;
  shop = await startShop();
  shop.pages.set('/web-elements.js', LOADER);
  // A loader of a version the vault does not serve (the same file, published as another version).
  shop.pages.set('/web-elements-2.16.0.js', LOADER.replace("'2.17.0'", "'2.16.0'"));
  await routeVault(context, routed);
});
afterAll(async () => {
  await browser?.close();
  await shop?.close();
});

/** A checkout page: the loader imported as a module, `basistheory(key, { customDomain })`, then `script`, with `make(type, selector, options)`. */
function checkout(key: string, script: string, loader = '/web-elements.js'): string {
  return `<!doctype html><html><head><meta charset="utf-8"></head><body>
<div id="number"></div><div id="expiry"></div><div id="cvc"></div><div id="card"></div><div id="reveal"></div>
<script type="module">
import { basistheory } from ${JSON.stringify(loader)};
window.seen = [];
window.ready = (async () => {
  const bt = await basistheory(${JSON.stringify(key)}, { customDomain: ${JSON.stringify(DOMAIN)}, disableTelemetry: true });
  window.bt = bt;
  window.make = async (type, selector, options) => {
    const element = bt.createElement(type, options);
    for (const event of ['change', 'focus', 'blur', 'ready', 'keydown']) element.on(event, (e) => window.seen.push({ on: type, ...e }));
    await element.mount(selector);
    return element;
  };
  ${script}
})();
</script></body></html>`;
}

async function open(path: string, html: string): Promise<Awaited<ReturnType<typeof openPage>>> {
  shop.pages.set(path, html);
  return openPage(context, `${shop.url}${path}`);
}

/** What the page's script ended with: `window.outcome`, or how it failed. */
const outcome = (page: Page) =>
  page.evaluate(async () => {
    const failed = await (window as any).ready.then(
      () => null,
      (e: Error) => ({ failed: e.name, message: e.message, status: (e as any).status }),
    );
    return failed ?? (window as any).outcome;
  });

describeEachStore('Basis Theory Web Elements 2.17 in chromium', (store) => {
  it('a card typed into the frames becomes a token holding it (tokens.create, tokenize, tokenIntents.create); events carry states only; the page and its requests never see the number', async () => {
    const vault = await store.vault();
    routed.vault = vault;
    const app = await publicApp(vault, [shop.url]);
    const { page, requests } = await open(
      '/checkout',
      checkout(
        app.key,
        `window.number = await make('cardNumber', '#number', { targetId: 'cn', placeholder: 'Card number', style: { base: { color: 'rgb(10, 20, 30)', ':focus': { color: 'rgb(1, 2, 3)' } } } });
         window.expiry = await make('cardExpirationDate', '#expiry', { targetId: 'exp' });
         window.cvc = await make('cardVerificationCode', '#cvc', { targetId: 'cvc' });
         window.card = await make('card', '#card', { placeholder: { cardNumber: 'Number on card' } });`,
      ),
    );
    try {
      expect(await outcome(page)).toBeUndefined();
      const field = (selector: string, n = 0) => page.frameLocator(`${selector} iframe`).locator('input').nth(n);
      await field('#number').pressSequentially(NUMBER);
      await field('#expiry').pressSequentially('1231');
      await field('#cvc').pressSequentially('123');
      await field('#cvc').press('Enter');
      await field('#card', 0).pressSequentially('378282246310005');
      await field('#card', 1).pressSequentially('0430');
      await field('#card', 2).pressSequentially('1234');
      expect(await field('#number').inputValue()).toBe('4242 4242 4242 4242');
      expect(await field('#number').getAttribute('placeholder')).toBe('Card number');
      expect(await field('#card', 0).getAttribute('placeholder')).toBe('Number on card');
      expect(await field('#number').evaluate((input) => getComputedStyle(input).color)).toBe('rgb(10, 20, 30)');
      // The frames are the vault's, on the custom domain, and the page cannot read into them.
      expect(await page.evaluate(() => Array.from(document.querySelectorAll('iframe')).map((f) => [new URL(f.src).origin, f.contentDocument === null]))).toEqual(
        Array(4).fill([`https://${DOMAIN}`, true]),
      );

      const answers = await page.evaluate(async () => {
        const w = window as any;
        const created = await w.bt.tokens.create({
          type: 'card',
          data: { number: w.number, expiration_month: w.expiry.month(), expiration_year: w.expiry.year(), cvc: w.cvc },
          metadata: { order: 'A-1' },
        });
        const tokenized = await w.bt.tokenize({ amex: { type: 'card', data: w.card }, note: 'kept' });
        const intent = await w.bt.tokenIntents.create({ type: 'card', data: w.card });
        return { created, tokenized, intent };
      });
      expect(answers.created).toMatchObject({ id: expect.any(String), type: 'card', metadata: { order: 'A-1' } });
      // Basis Theory's models are camelCase on the page.
      expect(Object.keys(answers.created).filter((k) => k.includes('_'))).toEqual([]);
      expect(answers.tokenized).toMatchObject({ amex: { id: expect.any(String), type: 'card' }, note: 'kept' });
      expect(answers.intent).toMatchObject({ id: expect.any(String), type: 'card' });
      expect(JSON.stringify(answers)).not.toMatch(/4242424242424242|378282246310005/);

      const reader = await vault.caller({ name: 'reader', permissions: ['token:read'], rules: READ_PCI as never });
      expect((await api(vault, 'GET', `/tokens/${answers.created.id}`, reader.key)).data).toEqual({ number: NUMBER, expiration_month: 12, expiration_year: 2031, cvc: '123' });
      expect((await api(vault, 'GET', `/tokens/${answers.tokenized.amex.id}`, reader.key)).data).toEqual({
        number: '378282246310005',
        expiration_month: 4,
        expiration_year: 2030,
        cvc: '1234',
      });

      // Nothing the frames stored holds a number in the clear.
      expect(await foundAtRest(vault, ['checkout'])).toEqual(['checkout']); // the scan reads the rows
      expect(await foundAtRest(vault, [NUMBER, '378282246310005'])).toEqual([]);

      // Events: Basis Theory's shapes, never a value.
      const seen = (await page.evaluate(() => (window as any).seen)) as Record<string, unknown>[];
      const changes = (on: string) => seen.filter((e) => e['on'] === on && e['type'] === 'change');
      expect(changes('cardNumber').at(-1)).toEqual({
        on: 'cardNumber',
        type: 'change',
        empty: false,
        complete: true,
        valid: true,
        maskSatisfied: true,
        errors: [],
        cardBrand: 'visa',
      });
      expect(changes('cardNumber')).toContainEqual(expect.objectContaining({ complete: false, maskSatisfied: false, errors: [{ targetId: 'cn', type: 'incomplete' }] }));
      expect(changes('card').at(-1)).toMatchObject({ complete: true, cardBrand: 'american-express', errors: [] });
      expect(changes('card')).toContainEqual(expect.objectContaining({ errors: expect.arrayContaining([{ targetId: 'cardExpirationDate', type: 'incomplete' }]) }));
      expect(seen).toContainEqual({ on: 'cardVerificationCode', type: 'keydown', targetId: 'cvc', key: 'Enter', altKey: false, ctrlKey: false, shiftKey: false, metaKey: false });
      expect(seen).toContainEqual({ on: 'cardNumber', type: 'focus', targetId: 'cn' });
      expect(seen.filter((e) => e['type'] === 'ready')).toHaveLength(4);
      for (const event of seen) expect(JSON.stringify(event)).not.toMatch(/\d{3}/);

      // The page's own requests never carry the number; the frames sent it to the vault.
      const clean = ownRequestsClean(page, requests, NUMBER);
      expect(clean.own).toBeGreaterThan(0);
      expect(clean.toVault).toEqual([`https://${DOMAIN}`]);
      // Eight digits of the number, not four: the page holds a random port and random frame ids, where four can appear by chance.
      expect(await page.evaluate(() => /4242 ?4242/.test(document.documentElement.outerHTML))).toBe(false);

      // A value outside a token's data is refused by the frame before anything is sent.
      const misplaced = await page.evaluate(async () => {
        const w = window as any;
        return w.bt.tokens.create({ type: 'token', data: 'x', metadata: { leak: w.number } }).then(
          () => 'created',
          (e: any) => [e.name, e.details?.code],
        );
      });
      expect(misplaced).toEqual(['BasisTheoryValidationError', 'element_outside_data']);
    } finally {
      await page.close();
    }
  });

  it('reveal: sessions.create, then tokens.retrieve with the authorized session key shows the token inside an element only; a disallowed origin is refused', async () => {
    const vault = await store.vault();
    routed.vault = vault;
    const app = await publicApp(vault, [shop.url]);
    const backend = await vault.caller({
      name: 'backend',
      permissions: ['token:create', 'token:read'],
      rules: [...READ_PCI, { priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:create'] }] as never,
    });
    const token = await api(vault, 'POST', '/tokens', backend.key, { type: 'card_number', data: NUMBER });
    const { page } = await open(
      '/reveal',
      checkout(app.key, `window.shown = await make('cardNumber', '#reveal', { targetId: 'shown', readOnly: true }); window.session = await bt.sessions.create();`),
    );
    try {
      expect(await outcome(page)).toBeUndefined();
      const session = await page.evaluate(() => (window as any).session);
      expect(session).toEqual({ sessionKey: expect.any(String), nonce: expect.any(String), expiresAt: expect.any(String) });
      const retrieve = () =>
        page.evaluate(
          async ([id, key]) => {
            const w = window as any;
            try {
              const retrieved = await w.bt.tokens.retrieve(id, { apiKey: key });
              await w.shown.setValue(retrieved.data);
              return { retrieved };
            } catch (e) {
              return { failed: (e as Error).name, status: (e as any).status, message: (e as Error).message };
            }
          },
          [token.id, session.sessionKey],
        );
      // Not authorized yet.
      expect(await retrieve()).toMatchObject({ failed: 'BasisTheoryApiError', status: 401, message: expect.stringMatching(/not authorized yet/) });
      await api(vault, 'POST', '/sessions/authorize', backend.key, { nonce: session.nonce, rules: READ_PCI });
      const shown = await retrieve();
      // The page holds a reference, never the data.
      expect(shown).toEqual({ retrieved: expect.objectContaining({ id: token.id, data: { correlationId: expect.any(String), elementId: expect.any(String), path: '' } }) });
      expect(await page.frameLocator('#reveal iframe').locator('input').inputValue()).toBe('4242 4242 4242 4242');
      expect(JSON.stringify(await page.evaluate(() => (window as any).seen))).not.toContain('4242');
      // A revealed value is not submitted again.
      expect(
        await page.evaluate(() =>
          (window as any).bt.tokens.create({ type: 'card_number', data: (window as any).shown }).then(
            () => 'created',
            (e: any) => e.details?.code,
          ),
        ),
      ).toBe('revealed_element');
    } finally {
      await page.close();
    }

    // Another page origin: the application allows only the shop's own.
    await api(vault, 'PUT', `/applications/${app.id}`, vault.adminKey, { name: 'checkout', allowed_origins: ['https://shop.example'] });
    const refused = await open(
      '/refused',
      checkout(
        app.key,
        `try { await make('cardNumber', '#number'); window.outcome = 'mounted'; } catch (e) { window.outcome = { name: e.name, status: e.status, message: e.message }; }`,
      ),
    );
    try {
      expect(await outcome(refused.page)).toEqual({
        name: 'BasisTheoryApiError',
        status: 403,
        message: expect.stringMatching(/does not allow browser elements on pages of "http:\/\/127\.0\.0\.1:\d+"/),
      });
    } finally {
      await refused.page.close();
    }
  });
});

describeEachStore('Basis Theory Web Elements proxy in chromium', (store) => {
  it("proxy.post: an element in the body reaches a pre-configured proxy's destination through the frame; the page gets the answer without the number", async () => {
    const sent: string[] = [];
    const destination = (async (_url: unknown, init?: RequestInit) => {
      const body = new TextDecoder().decode(init?.body as Uint8Array);
      sent.push(body);
      return new Response(JSON.stringify({ charged: true, echoed: JSON.parse(body).card }), { status: 200, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;
    const vault = await store.vault({ proxy: { unsafeFetch: destination } });
    routed.vault = vault;
    const app = await publicApp(vault, [shop.url]);
    const proxy = await api(vault, 'POST', '/proxies', vault.adminKey, { name: 'psp', destination_url: 'https://psp.example/v1', require_auth: false });
    const { page, requests } = await open('/proxy', checkout(app.key, `window.number = await make('cardNumber', '#number', { targetId: 'cn' });`));
    try {
      expect(await outcome(page)).toBeUndefined();
      await page.frameLocator('#number iframe').locator('input').pressSequentially(NUMBER);
      const answer = await page.evaluate(
        (key) =>
          (window as any).bt.proxy
            .post({ path: '/charges', headers: { 'BT-PROXY-KEY': key }, body: { card: (window as any).number, amount: 100 } })
            .catch((e: any) => ({ failed: e.name, message: e.message })),
        proxy.key,
      );
      expect(sent.map((b) => JSON.parse(b))).toEqual([{ card: NUMBER, amount: 100 }]);
      expect(answer).toEqual({ charged: true });
      expect(ownRequestsClean(page, requests, NUMBER).toVault).toEqual([`https://${DOMAIN}`]);
    } finally {
      await page.close();
    }
  });
});

describe('Basis Theory Web Elements versions', () => {
  it('a loader of a version not served fails with a message naming the versions served', async () => {
    const vault = await createTestVault();
    routed.vault = vault;
    try {
      const { page } = await open('/old', checkout('key_public_x', 'window.outcome = "loaded";', '/web-elements-2.16.0.js'));
      try {
        expect(await outcome(page)).toEqual({
          failed: 'Error',
          status: undefined,
          message: "tokenvault serves Basis Theory Web Elements 2.17.x; this page's @basis-theory/web-elements is 2.16.0: install a served version (docs/elements.md)",
        });
      } finally {
        await page.close();
      }
      const handler = createFetchHandler(vault, { headerPrefix: 'BT' });
      const get = (path: string) => handler(new Request(`https://${DOMAIN}${path}`));
      const frame = await get('/web-elements/2.16.0/hosted-elements/frame?element=text');
      expect([frame.status, await frame.text()]).toEqual([404, expect.stringContaining('serves Basis Theory Web Elements 2.17.x')]);
      expect((await get('/web-elements/latest/client/index.js')).status).toBe(404);
      const client = await get('/web-elements/2.17.3/client/index.js');
      expect([client.status, client.headers.get('access-control-allow-origin'), (await client.text()).includes('BasisTheoryElements')]).toEqual([200, '*', true]);
      // The frames of this path name the vault's header prefix (the page does not know it).
      const framePage = await get(
        '/web-elements/2.17.0/hosted-elements/frame?element=cardNumber&origin=http%3A%2F%2F127.0.0.1%3A3000&instance=0123456789abcdef01234567&id=89abcdef0123456789abcdef',
      );
      expect(await framePage.text()).toContain('<meta name="tokenvault-header-prefix" content="BT">');
      expect(framePage.headers.get('content-security-policy')).toContain('frame-ancestors http://127.0.0.1:3000');
      expect((await get('/web-elements/2.17.0/hosted-elements/frame.js')).status).toBe(200);
      // tokenvault's own path does not serve Basis Theory's client.
      expect((await get('/elements/v1/bt-client.js')).status).toBe(404);
    } finally {
      await vault.close();
    }
  });
});
