import { readFileSync } from 'node:fs';
import type { BrowserContext, Page, Request as PwRequest } from 'playwright-core';
import { createFetchHandler } from '../../src/http/index.js';
import type { TestVault } from '../../src/testing/index.js';

/*
 * Basis Theory's Web Elements against the vault in chromium (docs/elements.md, "Basis Theory Web
 * Elements and React Elements"): the merchant's page on 127.0.0.1 loads the real
 * `@basis-theory/web-elements` with `customDomain: DOMAIN`; the browser context routes
 * `https://DOMAIN/**` to the vault's fetch handler (served with the BT header prefix), so the vault
 * is a second, https origin without TLS or DNS.
 */

export const DOMAIN = 'vault.shop.test';
export const VAULT_ORIGIN = `https://${DOMAIN}`;
export const NUMBER = '4242424242424242';
export const READ_PCI = [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }];

/** The loader as published: `dist/module/module.js` of the pinned package (an ES module without imports). */
export const LOADER = readFileSync(new URL('../../node_modules/@basis-theory/web-elements/dist/module/module.js', import.meta.url), 'utf8');

/** Which vault the route reaches (each test makes its own, per store). */
export interface Routed {
  vault: TestVault | null;
}

/** Routes the custom domain to the current vault; anything else off this machine is refused (the loader's telemetry). */
export async function routeVault(context: BrowserContext, routed: Routed): Promise<void> {
  let handler: ((request: Request) => Promise<Response>) | null = null;
  let handled: TestVault | null = null;
  await context.route(`${VAULT_ORIGIN}/**`, async (route) => {
    if (routed.vault === null) return route.abort();
    if (handled !== routed.vault) {
      handled = routed.vault;
      handler = createFetchHandler(routed.vault, { headerPrefix: 'BT' });
    }
    const request = route.request();
    const body = request.postDataBuffer();
    // The vault sees the request as it would behind its own name: Host is the custom domain.
    const response = await handler!(
      new Request(request.url(), { method: request.method(), headers: { ...request.headers(), host: DOMAIN }, ...(body === null ? {} : { body: new Uint8Array(body) }) }),
    );
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    await route.fulfill({ status: response.status, headers, body: Buffer.from(await response.arrayBuffer()) });
  });
  await context.route(/^https?:\/\/(?!vault\.shop\.test|127\.0\.0\.1)/, (route) => route.abort());
}

/** A call to the vault's API from the test (the merchant's backend), through the same handler. */
export async function api(vault: TestVault, method: string, path: string, key: string, body?: unknown): Promise<any> {
  const handler = createFetchHandler(vault, { headerPrefix: 'BT' });
  const response = await handler(
    new Request(`${VAULT_ORIGIN}${path}`, {
      method,
      headers: { 'BT-API-KEY': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
  );
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text.length === 0 ? null : JSON.parse(text);
}

/** A public application for the shop's pages, allowed on `origins`. */
export async function publicApp(vault: TestVault, origins: string[], permissions = ['token:create', 'token-intent:create']): Promise<{ id: string; key: string }> {
  return api(vault, 'POST', '/applications', vault.adminKey, { name: 'checkout', type: 'public', permissions, allowed_origins: origins });
}

/** Opens `url`, recording every request the page and its frames make. */
export async function openPage(context: BrowserContext, url: string): Promise<{ page: Page; requests: PwRequest[] }> {
  const page = await context.newPage();
  const requests: PwRequest[] = [];
  page.on('request', (request) => requests.push(request));
  await page.goto(url);
  return { page, requests };
}

/** The page's own requests (its main frame's) carry no digit run of the number; the frames' POSTs went to the vault. */
export function ownRequestsClean(page: Page, requests: PwRequest[], number: string): { own: number; toVault: string[] } {
  const own = requests.filter((r) => r.frame() === page.mainFrame());
  for (const r of own)
    if (`${r.url()} ${r.postData() ?? ''} ${JSON.stringify(r.headers())}`.includes(number.slice(0, 8))) throw new Error(`the page's request ${r.url()} carries the number`);
  const toVault = requests.filter((r) => r.frame() !== page.mainFrame() && r.method() === 'POST' && (r.postData() ?? '').includes(number)).map((r) => new URL(r.url()).origin);
  return { own: own.length, toVault };
}

/**
 * The at-rest scan (as test/storage/encryption-at-rest.test.ts does for a file) over what the
 * frames stored: the whole SQLite database serialized, or every row of the PostgreSQL schema as
 * text. Returns the needles found (none, when the data is sealed).
 */
export async function foundAtRest(vault: TestVault, needles: string[]): Promise<string[]> {
  const store = vault.store as unknown as {
    database?: { serialize(): Buffer };
    pool?: { query(config: { text: string; values?: unknown[] }): Promise<{ rows: any[] }> };
    schema?: string;
  };
  let text: string;
  if (store.database !== undefined) text = store.database.serialize().toString('latin1');
  else {
    const { rows: tables } = await store.pool!.query({ text: 'SELECT table_name FROM information_schema.tables WHERE table_schema = $1', values: [store.schema] });
    const parts: string[] = [];
    for (const { table_name: table } of tables) {
      const { rows } = await store.pool!.query({ text: `SELECT t::text AS row FROM "${store.schema}"."${table}" t` });
      for (const row of rows) parts.push(row.row);
    }
    text = parts.join('\n');
  }
  return needles.filter((needle) => text.includes(needle));
}
