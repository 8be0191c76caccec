import { mkdtempSync, rmSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium } from 'playwright-core';
import { createFetchHandler } from '../../src/http/index.js';
import { toNodeListener } from '../../src/http/node.js';
import type { TestVault } from '../../src/testing/index.js';

/** Debian's chromium (CI installs it: .ci/run); flags for a closed network and a root user. */
export const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** One browser for a test file, with a fresh profile. */
export async function launchBrowser(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'tokenvault-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export type { Browser };

function listen(server: Server, host: string): Promise<number> {
  return new Promise((resolve) => server.listen(0, host, () => resolve((server.address() as AddressInfo).port)));
}

/** A server of HTML pages (path → HTML), and of scripts at paths ending in `.js`. */
function pageServer(pages: Map<string, string>): Server {
  return createServer((req, res) => {
    const html = pages.get(req.url ?? '');
    const type = (req.url ?? '').endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/html; charset=utf-8';
    res.writeHead(html === undefined ? 404 : 200, { 'content-type': type });
    res.end(html ?? 'not found');
  });
}

/** A merchant's page server alone on `127.0.0.1:PORT` (path → HTML or script). */
export async function startShop(): Promise<{ url: string; pages: Map<string, string>; close(): Promise<void> }> {
  const pages = new Map<string, string>();
  const server = pageServer(pages);
  const port = await listen(server, '127.0.0.1');
  return {
    url: `http://127.0.0.1:${port}`,
    pages,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * The vault on `localhost:PORT2` and a merchant's page server on `127.0.0.1:PORT1`: two origins, as
 * a shop and its vault are. `pages` maps paths to the HTML the merchant serves. `hostileUrl`
 * (`127.0.0.2:PORT3`, another host) serves `hostilePages`: an attacker's site, for the red-team
 * probes (browser-hostile.test.ts).
 */
export async function startOrigins(
  vault: TestVault,
): Promise<{ vaultUrl: string; shopUrl: string; pages: Map<string, string>; hostileUrl: string; hostilePages: Map<string, string>; close(): Promise<void> }> {
  const vaultServer = createServer(toNodeListener(createFetchHandler(vault)));
  const pages = new Map<string, string>();
  const hostilePages = new Map<string, string>();
  const shopServer = pageServer(pages);
  const hostileServer = pageServer(hostilePages);
  const vaultPort = await listen(vaultServer, '127.0.0.1');
  const shopPort = await listen(shopServer, '127.0.0.1');
  const hostilePort = await listen(hostileServer, '127.0.0.2');
  const servers = [vaultServer, shopServer, hostileServer];
  return {
    vaultUrl: `http://localhost:${vaultPort}`,
    shopUrl: `http://127.0.0.1:${shopPort}`,
    pages,
    hostileUrl: `http://127.0.0.2:${hostilePort}`,
    hostilePages,
    close: async () => {
      for (const server of servers) server.closeAllConnections();
      await Promise.all(servers.map((server) => new Promise((r) => server.close(r))));
    },
  };
}

/**
 * A merchant's page: loads the bundle from the vault (with its integrity hash), inits Elements with
 * `key` and runs `script` (which may use `elements`, `mount(type, selector, options)` and `record`).
 * Change events and timings land in `window.seen`.
 */
export function merchantPage(vaultUrl: string, integrity: string, key: string, script: string): string {
  return `<!doctype html><html><head><meta charset="utf-8">
<script src="${vaultUrl}/elements/v1/elements.js" integrity="${integrity}" crossorigin="anonymous"></script></head>
<body><div id="number"></div><div id="expiry"></div><div id="cvc"></div><div id="reveal"></div>
<script>
window.seen = { events: [], readyMs: [] };
window.ready = (async () => {
  const elements = await TokenVaultElements.init({ baseUrl: ${JSON.stringify(vaultUrl)}, apiKey: ${JSON.stringify(key)} });
  window.elements = elements;
  window.mount = async (type, selector, options) => {
    const element = elements.create(type, options);
    element.on('change', (e) => window.seen.events.push(e));
    const started = performance.now();
    await element.mount(selector);
    window.seen.readyMs.push(performance.now() - started);
    return element;
  };
  ${script}
})();
</script></body></html>`;
}
