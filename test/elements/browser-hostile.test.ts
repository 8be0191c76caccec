import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { BrowserContext, Frame, Page } from 'playwright-core';
import { elementsIntegrity } from '../../src/http/elements-handler.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { launchBrowser, merchantPage, startOrigins } from './browser-harness.js';

/*
 * In chromium: Elements driven by a hostile page (docs/elements.md, "Security
 * model" and "Against a hostile page"). The shop on 127.0.0.1, the vault on localhost, the attacker
 * on 127.0.0.2. The attacker's script is given what it could not know (the instance, element ids
 * and key in the frames' addresses): the frames must refuse it by origin and source alone.
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

/** What a vault frame's address holds: the query the vault reads, and the key in the fragment. */
function frameAddress(src: string): { instance: string; id: string; key: string; origin: string } {
  const url = new URL(src);
  const fragment = JSON.parse(decodeURIComponent(url.hash.slice(1))) as { key: string };
  return { instance: url.searchParams.get('instance')!, id: url.searchParams.get('id')!, key: fragment.key, origin: url.searchParams.get('origin')! };
}

/** The hostile script's probes, run inside a window of another origin (or the wrong window of the shop's). */
const SPOOF = `
window.got = [];
window.spoof = (targets, a, tokenId) => {
  const page = [
    { type: 'clear' },
    { type: 'focus' },
    { type: 'reveal', token: tokenId, rid: 1 },
    { type: 'submit', path: '/tokenize', body: { t: { type: 'card_number', data: { $tvElement: a.numberId } } }, rid: 2 },
  ];
  for (const target of targets) {
    for (const m of page) {
      try { target.postMessage({ tv: 1, instance: a.instance, ...m }, '*'); } catch (e) { window.got.push('throw ' + e.name); }
    }
    // A sibling's collect, with the right instance, element and key.
    const channel = new MessageChannel();
    channel.port1.onmessage = (event) => window.got.push(event.data);
    try { target.postMessage({ tv: 1, type: 'collect', instance: a.instance, element: a.numberId, key: a.key }, '*', [channel.port2]); } catch (e) { window.got.push('throw ' + e.name); }
  }
};
window.spoofPage = (page, a) => {
  // The reverse: fake frame messages to the merchant's page script.
  for (let rid = 1; rid <= 20; rid++) page.postMessage({ tv: 1, instance: a.instance, element: a.numberId, type: 'result', rid, ok: true, result: { id: 'tok_spoofed' } }, '*');
  page.postMessage({ tv: 1, instance: a.instance, element: a.numberId, type: 'change', state: { empty: false, complete: true, valid: true, errors: [], cardBrand: 'spoofed' } }, '*');
  page.postMessage({ tv: 1, instance: a.instance, element: a.revealId, type: 'ready' }, '*');
};`;

describeEachStore('Elements against a hostile page, in chromium: what a hostile embedding page can reach', (store) => {
  async function setup() {
    const vault: TestVault = await store.vault();
    const origins = await startOrigins(vault);
    const app = (await call(origins.vaultUrl, 'POST', '/applications', vault.adminKey, {
      name: 'checkout',
      type: 'public',
      permissions: ['token:create'],
      allowed_origins: [origins.shopUrl],
    })) as { id: string; key: string };
    const backend = await vault.caller({
      name: 'backend',
      permissions: ['token:create', 'token:read'],
      rules: [...READ_PCI, { priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:create'] }] as never,
    });
    const token = (await call(origins.vaultUrl, 'POST', '/tokens', backend.key, { type: 'card_number', data: NUMBER })) as { id: string };
    const session = (await call(origins.vaultUrl, 'POST', '/sessions', app.key)) as { session_key: string; nonce: string; expires_at: string };
    await call(origins.vaultUrl, 'POST', '/sessions/authorize', backend.key, {
      nonce: session.nonce,
      rules: [...READ_PCI, { priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:create'] }],
    });
    return { vault, origins, app, backend, token, session };
  }

  async function open(s: Awaited<ReturnType<typeof setup>>, key: string, script: string): Promise<Page> {
    s.origins.pages.set('/checkout', merchantPage(s.origins.vaultUrl, integrity, key, script));
    const page = await context.newPage();
    await page.goto(`${s.origins.shopUrl}/checkout`);
    return page;
  }

  /** Adds an iframe of `src` to `frame`'s document and waits for its load (an error page loads too). */
  const addFrame = (frame: Frame | Page, src: string, attributes: Record<string, string> = {}) =>
    frame.evaluate(
      ([src, attributes]) =>
        new Promise<void>((resolve) => {
          const iframe = document.createElement('iframe');
          for (const [name, value] of Object.entries(attributes)) iframe.setAttribute(name, value);
          iframe.addEventListener('load', () => resolve());
          iframe.src = src;
          document.body.appendChild(iframe);
        }),
      [src, attributes] as const,
    );

  it('postMessage spoofing: a sibling iframe of another origin, a window of the shop\'s own origin that is not the parent, and a hostile window that opened the shop are all ignored, both ways; no message carrying data targets "*"', async () => {
    const s = await setup();
    s.origins.hostilePages.set('/ad', `<!doctype html><html><body><script>${SPOOF}</script></body></html>`);
    s.origins.pages.set('/sibling', `<!doctype html><html><body><script>${SPOOF}</script></body></html>`);
    const vaultRequests: string[] = [];
    const onRequest = (request: { url(): string; method(): string }) => {
      if (request.url().startsWith(s.origins.vaultUrl) && !request.url().includes('/elements/v1/')) vaultRequests.push(`${request.method()} ${new URL(request.url()).pathname}`);
    };
    context.on('request', onRequest);
    const page = await open(
      s,
      s.session.session_key,
      `window.number = await mount('cardNumber', '#number');
       window.shown = await mount('cardNumber', '#reveal');`,
    );
    try {
      await page.evaluate(() => (window as any).ready);
      await page.frameLocator('#number iframe').locator('input').pressSequentially(NUMBER);
      const number = frameAddress(await page.locator('#number iframe').getAttribute('src').then(String));
      const reveal = frameAddress(await page.locator('#reveal iframe').getAttribute('src').then(String));
      const a = { instance: number.instance, numberId: number.id, revealId: reveal.id, key: number.key };
      await addFrame(page, `${s.origins.hostileUrl}/ad`);
      await addFrame(page, `${s.origins.shopUrl}/sibling`);
      const ad = page.frames().find((f) => f.url().endsWith('/ad'))!;
      const sibling = page.frames().find((f) => f.url().endsWith('/sibling'))!;
      const baseline = vaultRequests.length;

      // 1. An ad on the shop's page (another origin, a sibling of the frames).
      await ad.evaluate(
        ([a, tokenId]) => {
          const w = window as any;
          w.spoof(
            Array.from({ length: parent.frames.length }, (_, i) => parent.frames[i]),
            a,
            tokenId,
          );
          w.spoofPage(parent, a);
        },
        [a, s.token.id] as const,
      );
      // 2. A frame of the shop's own origin that is not the frames' parent (the origin check alone would pass it).
      await sibling.evaluate(
        ([a, tokenId]) => {
          const w = window as any;
          w.spoof(
            Array.from({ length: parent.frames.length }, (_, i) => parent.frames[i]),
            a,
            tokenId,
          );
          w.spoofPage(parent, a);
        },
        [a, s.token.id] as const,
      );
      // 3. A hostile top window that opened the shop's checkout reaches its frames through the opener handle.
      const hostile = await context.newPage();
      s.origins.hostilePages.set('/opener', `<!doctype html><html><body><script>${SPOOF}</script></body></html>`);
      await hostile.goto(`${s.origins.hostileUrl}/opener`);
      const [popup] = await Promise.all([context.waitForEvent('page'), hostile.evaluate((url) => void ((window as any).shop = window.open(url)), `${s.origins.shopUrl}/checkout`)]);
      await popup.waitForLoadState('load');
      await popup.evaluate(() => (window as any).ready);
      const popupNumber = frameAddress(await popup.locator('#number iframe').getAttribute('src').then(String));
      const popupReveal = frameAddress(await popup.locator('#reveal iframe').getAttribute('src').then(String));
      const navigated = await hostile.evaluate(
        ([a, tokenId, vaultUrl]) => {
          const w = window as any;
          const shop = w.shop as Window;
          w.spoof(
            Array.from({ length: shop.frames.length }, (_, i) => shop.frames[i]),
            a,
            tokenId,
          );
          w.spoofPage(shop, a);
          // And it may not navigate the shop's frame to one with its own key and options.
          try {
            shop.frames[0]!.location.href = `${vaultUrl}/elements/v1/frame?element=cardNumber&origin=${encodeURIComponent(location.origin)}&instance=${a.instance}&id=${a.numberId}#{}`;
            return 'navigated';
          } catch (e) {
            return (e as Error).name;
          }
        },
        [{ instance: popupNumber.instance, numberId: popupNumber.id, revealId: popupReveal.id, key: popupNumber.key }, s.token.id, s.origins.vaultUrl] as const,
      );

      // A legitimate round trip through the same frames after all of it: the page's own tokenize
      // (the number frame collects nothing from others) and reveal; what was spoofed before it was
      // delivered before it.
      const legit = await page.evaluate(async () => {
        const w = window as any;
        const created = await w.elements.tokenize({ t: { type: 'card_number', data: w.number } });
        await w.shown.setValueRef('tok_none').catch((e: { code: string }) => e.code);
        return created;
      });
      expect((legit as { t: { id: string } }).t.id).toMatch(/^[0-9a-f-]+$|^tok_/);
      expect((legit as { t: { id: string } }).t.id).not.toBe('tok_spoofed');
      // Nothing any hostile window sent was acted on: the only vault requests are the page's own.
      expect(vaultRequests.slice(baseline).filter((r) => r !== 'GET /tenants/self')).toEqual(['POST /tokenize', 'GET /tokens/tok_none']);
      expect(navigated).not.toBe('navigated');
      expect(await popup.locator('#number iframe').getAttribute('src')).toContain(encodeURIComponent(s.origins.shopUrl));
      // No collect answered, no message thrown back; the typed number is still there (no spoofed clear).
      for (const w of [ad, sibling]) expect(await w.evaluate(() => (window as any).got)).toEqual([]);
      expect(await hostile.evaluate(() => (window as any).got)).toEqual([]);
      expect(await page.frameLocator('#number iframe').locator('input').inputValue()).toBe('4242 4242 4242 4242');
      expect(await page.frameLocator('#reveal iframe').locator('input').inputValue()).toBe('');
      // The page script took none of the fake frame messages.
      const seen = await page.evaluate(() => (window as any).seen.events as { cardBrand?: string }[]);
      expect(seen.some((e) => e.cardBrand === 'spoofed')).toBe(false);
      await popup.close();
      await hostile.close();
      // No postMessage of the shipped files targets "*" (each names the page's or the vault's origin).
      for (const name of ['frame.js', 'elements.js', 'elements.mjs']) {
        expect(readFileSync(new URL(`../../dist/elements/${name}`, import.meta.url), 'utf8'), name).not.toMatch(/["'`]\*["'`]/);
      }
    } finally {
      context.off('request', onRequest);
      await page.close();
      await s.origins.close();
    }
  });

  it("a frame made for the shop is shown only where every ancestor is the shop: not under another scheme, port or host, a sandboxed (null-origin) or data: parent, a hostile page, nor in the shop's own checkout framed by a hostile page (clickjacking)", async () => {
    const s = await setup();
    const shopPort = new URL(s.origins.shopUrl).port;
    let n = 0;
    /** A frame address for `origin`, with an id of its own to find it by. */
    const frameUrl = (origin: string) => {
      const id = (++n).toString(16).padStart(24, '0');
      return { id, src: `${s.origins.vaultUrl}/elements/v1/frame?element=text&origin=${encodeURIComponent(origin)}&instance=${'a'.repeat(24)}&id=${id}#{}` };
    };
    /** Whether the vault's frame page with this id shows its document (a refused one is Chromium's error page). */
    const shown = async (p: Page, id: string) => {
      const frame = p.frames().find((f) => f.url().includes(`id=${id}`));
      return frame === undefined ? false : (await frame.evaluate(() => document.body.textContent ?? '')).includes('tokenvault Elements');
    };
    s.origins.pages.set('/blank', '<!doctype html><html><body></body></html>');
    const page = await open(s, s.app.key, `window.number = await mount('cardNumber', '#number');`);
    try {
      await page.evaluate(() => (window as any).ready);
      // The control: a frame for this very origin, added the same way, is shown.
      const control = frameUrl(s.origins.shopUrl);
      await addFrame(page, control.src);
      expect(await shown(page, control.id)).toBe(true);
      // Origin tricks in the address: https for http, another port, another host of the same machine.
      const tricks = [`https://127.0.0.1:${shopPort}`, `http://127.0.0.1:${Number(shopPort) === 65535 ? 1 : Number(shopPort) + 1}`, `http://localhost:${shopPort}`];
      for (const origin of tricks) {
        const probe = frameUrl(origin);
        await addFrame(page, probe.src);
        expect(await shown(page, probe.id), origin).toBe(false);
      }
      // Parents of an opaque origin inside the shop's page: a sandboxed iframe of the shop's own
      // address (its origin is "null") and a data: document.
      await addFrame(page, `${s.origins.shopUrl}/blank`, { sandbox: 'allow-scripts', name: 'sandboxed' });
      await addFrame(page, 'data:text/html,<p>data</p>', { name: 'data' });
      for (const name of ['sandboxed', 'data']) {
        const parent = page.frames().find((f) => f.name() === name)!;
        const probe = frameUrl(s.origins.shopUrl);
        await addFrame(parent, probe.src);
        expect(await shown(page, probe.id), name).toBe(false);
      }
      // A blob: document the shop made is the shop's origin: the frame shows (the shop's own script).
      await page.evaluate(() => {
        const iframe = document.createElement('iframe');
        iframe.name = 'blob';
        iframe.src = URL.createObjectURL(new Blob(['<p>blob</p>'], { type: 'text/html' }));
        document.body.appendChild(iframe);
        return new Promise((resolve) => iframe.addEventListener('load', resolve));
      });
      const blob = frameUrl(s.origins.shopUrl);
      await addFrame(
        page.frames().find((f) => f.name() === 'blob')!,
        blob.src,
      );
      expect(await shown(page, blob.id)).toBe(true);
      // The origin parameter itself: null, or anything but an http(s) origin, is a 400 from the vault.
      for (const origin of ['null', 'data:', `blob:${s.origins.shopUrl}/x`, `${s.origins.shopUrl}/path`]) {
        const response = await fetch(frameUrl(origin).src.replace('localhost', '127.0.0.1'));
        expect(response.status, origin).toBe(400);
      }
    } finally {
      await page.close();
    }

    // A hostile page: a frame naming the shop is not shown there; nor are the frames of the shop's
    // checkout when the hostile page frames the whole checkout under an invisible overlay.
    s.origins.hostilePages.set('/jack', '<!doctype html><html><body><div style="position:absolute;inset:0;z-index:2">Win a prize: click here</div></body></html>');
    const hostile = await context.newPage();
    try {
      await hostile.goto(`${s.origins.hostileUrl}/jack`);
      const direct = frameUrl(s.origins.shopUrl);
      await addFrame(hostile, direct.src, { style: 'opacity:0;position:absolute;inset:0;z-index:1' });
      expect(await shown(hostile, direct.id)).toBe(false);
      await addFrame(hostile, `${s.origins.shopUrl}/checkout`, { style: 'opacity:0;position:absolute;inset:0;z-index:1', name: 'shop' });
      const shop = hostile.frames().find((f) => f.name() === 'shop')!;
      // The checkout's own script runs, its frames are added, and none of them is shown.
      await shop.waitForFunction(() => document.querySelector('#number iframe') !== null);
      const inner = shop.childFrames();
      expect(inner.length).toBeGreaterThan(0);
      for (const frame of inner) expect(await frame.evaluate(() => document.querySelector('input') !== null).catch(() => false)).toBe(false);
    } finally {
      await hostile.close();
      await s.origins.close();
    }
  });

  it('a reveal with an expired session shows nothing, and says why; a frame that showed a token before the session expired stops showing it when a reveal fails', async () => {
    const s = await setup();
    const page = await open(s, s.session.session_key, `window.shown = await mount('cardNumber', '#reveal', { targetId: ${JSON.stringify(s.token.id)} });`);
    const outcome = (p: Page) => p.evaluate(async () => (await (window as any).ready, (window as any).outcome));
    const input = (p: Page) => p.frameLocator('#reveal iframe').locator('input');
    try {
      await page.evaluate(() => (window as any).ready);
      expect(await input(page).inputValue()).toBe('4242 4242 4242 4242');
      // The session ends (the vault's clock, not a wait).
      s.vault.clock.set(Date.parse(s.session.expires_at) + 1);
      const again = await page.evaluate(
        (id) =>
          (window as any).shown.setValueRef(id).then(
            () => 'shown',
            (e: { code: string; message: string }) => ({ code: e.code, message: e.message }),
          ),
        s.token.id,
      );
      expect(again).toEqual({ code: 'authentication_error', message: expect.stringMatching(/session has expired/) });
      expect(await input(page).inputValue()).toBe('');
    } finally {
      await page.close();
    }
    // A page opened after the expiry: the frame is never ready, shows nothing and the page learns why.
    const late = await open(
      s,
      s.session.session_key,
      `try { await mount('cardNumber', '#reveal', { targetId: ${JSON.stringify(s.token.id)} }); window.outcome = 'shown'; } catch (e) { window.outcome = { code: e.code, message: e.message }; }`,
    );
    try {
      expect(await outcome(late)).toEqual({ code: 'authentication_error', message: expect.stringMatching(/session has expired; create a new session/) });
      expect(await input(late).inputValue()).toBe('');
    } finally {
      await late.close();
      await s.origins.close();
    }
  });
});

/** A call to the vault's API from the test (the merchant's backend). */
async function call(vaultUrl: string, method: string, path: string, key: string, body?: unknown): Promise<unknown> {
  const response = await fetch(vaultUrl.replace('localhost', '127.0.0.1') + path, {
    method,
    headers: { 'SVC-API-KEY': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text.length === 0 ? null : JSON.parse(text);
}
