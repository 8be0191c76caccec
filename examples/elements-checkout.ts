/**
 * A merchant's checkout page with tokenvault Elements (docs/elements.md). Run the vault, then this:
 *
 *   TOKENVAULT_ADMIN_KEY=<at least 24 characters> npx tokenvault serve --db :memory:     # http://127.0.0.1:8080
 *   TOKENVAULT_URL=http://localhost:8080 TOKENVAULT_ADMIN_KEY=<the same> npx tsx examples/elements-checkout.ts
 *
 * and open http://127.0.0.1:3000/. The page (origin 127.0.0.1:3000) and the vault (localhost:8080)
 * are two origins, as a shop and its vault are: the card goes from the vault's frames to the vault.
 * This server creates a public application that allows only its own origin, then serves the page
 * with that application's key in it (a public key is meant for browsers).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import type { ProblemDetails } from 'tokenvault/http';

export interface CheckoutServer {
  /** The page's address. */
  url: string;
  applicationId: string;
  close(): Promise<void>;
}

export async function main(log: (line: string) => void = console.log, options: { vaultUrl?: string; adminKey?: string; port?: number } = {}): Promise<CheckoutServer> {
  const vaultUrl = options.vaultUrl ?? process.env['TOKENVAULT_URL'] ?? 'http://localhost:8080';
  const adminKey = options.adminKey ?? process.env['TOKENVAULT_ADMIN_KEY'];
  if (adminKey === undefined) throw new Error('Set TOKENVAULT_ADMIN_KEY to the key the vault was started with');
  const server = createServer((req, res) => {
    if (req.url !== '/') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 3000, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // A public application: it may only create tokens, and only from this page's origin.
  const response = await fetch(`${vaultUrl.replace('://localhost', '://127.0.0.1')}/applications`, {
    method: 'POST',
    headers: { 'SVC-API-KEY': adminKey, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'checkout page', type: 'public', permissions: ['token:create'], allowed_origins: [url] }),
  });
  if (response.status !== 201) {
    // The vault's refusals are RFC 9457 problem documents in its own words (no data in them).
    const problem = (await response.json()) as ProblemDetails;
    throw new Error(`creating the public application: ${problem.status} ${problem.detail}`);
  }
  const app = (await response.json()) as { id: string; key: string };
  const template = readFileSync(new URL('./elements/checkout.html', import.meta.url), 'utf8');
  const page = template.replaceAll('{{VAULT_URL}}', vaultUrl).replaceAll('{{PUBLIC_KEY}}', app.key);
  log(`checkout page: ${url}/ (vault ${vaultUrl}, public application ${app.id})`);
  return {
    url: `${url}/`,
    applicationId: app.id,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
