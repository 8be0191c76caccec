/**
 * Example: the vault's HTTP API in Node's own http server.
 *
 * `createFetchHandler` gives a web-standard `(Request) => Promise<Response>`; `toNodeListener`
 * adapts it to `(req, res)`. The example starts on a free port, creates a card token over HTTP,
 * reads it back (masked), and stops.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { createVault, generateMasterKey } from 'tokenvault';
import { createFetchHandler } from 'tokenvault/http';
import { toNodeListener } from 'tokenvault/node';
import { createSqliteStore } from 'tokenvault/sqlite';

export interface MountExampleResult {
  created: { status: number; body: { id: string; data: { number: string } } };
  fetched: { status: number; body: { id: string; data: { number: string } } };
}

export async function main(log: (...items: unknown[]) => void = console.log): Promise<MountExampleResult> {
  // In production: a file database and TOKENVAULT_MASTER_KEY from your secret store.
  const vault = await createVault({ store: createSqliteStore({ filename: ':memory:' }), masterKey: generateMasterKey() });
  const { application: admin } = await vault.createTenant({ name: 'example' });
  const app = await vault.applications.create(await vault.authenticate(admin.key), {
    name: 'checkout',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  });

  const server = createServer(toNodeListener(createFetchHandler(vault)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const created = await fetch(`${base}/tokens`, {
      method: 'POST',
      headers: { 'SVC-API-KEY': app.key!, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 } }),
    });
    const token = (await created.json()) as MountExampleResult['created']['body'];
    const fetched = await fetch(`${base}/tokens/${token.id}`, { headers: { 'SVC-API-KEY': app.key! } });
    const result = { created: { status: created.status, body: token }, fetched: { status: fetched.status, body: (await fetched.json()) as MountExampleResult['fetched']['body'] } };
    log('node:http', result.created.status, result.fetched.status, result.fetched.body.data.number);
    return result;
  } finally {
    server.close();
    await once(server, 'close');
    await vault.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
