/**
 * Example: the vault's HTTP API mounted under `/vault` in an Express 5 application.
 *
 * Express strips the mount path from `req.url`, so the vault sees `/tokens`. Mount it before any
 * body-parsing middleware (or on a router without one): the vault reads and limits the body itself.
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { createVault, generateMasterKey } from 'tokenvault';
import { createFetchHandler } from 'tokenvault/http';
import { toNodeListener } from 'tokenvault/node';
import { createSqliteStore } from 'tokenvault/sqlite';
import type { MountExampleResult } from './mount-node-http.js';

// @types/express is not installed here: the slice of Express this example uses, typed by hand.
interface ExpressApp {
  use(path: string, handler: (req: never, res: never, next: () => void) => void): void;
  get(path: string, handler: (req: unknown, res: { json(body: unknown): void }) => void): void;
  listen(port: number, host: string): Server;
}
const express = createRequire(import.meta.url)('express') as () => ExpressApp;

export async function main(log: (...items: unknown[]) => void = console.log): Promise<MountExampleResult & { own: string }> {
  const vault = await createVault({ store: createSqliteStore({ filename: ':memory:' }), masterKey: generateMasterKey() });
  const { application: admin } = await vault.createTenant({ name: 'example' });
  const app = await vault.applications.create(await vault.authenticate(admin.key), {
    name: 'checkout',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  });

  const web = express();
  web.use('/vault', toNodeListener(createFetchHandler(vault)));
  // The rest of the application keeps its own routes and middleware.
  web.get('/hello', (_req, res) => {
    res.json({ hello: 'world' });
  });
  const server = web.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const created = await fetch(`${base}/vault/tokens`, {
      method: 'POST',
      headers: { 'SVC-API-KEY': app.key!, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'card', data: { number: '4242424242424242' } }),
    });
    const token = (await created.json()) as MountExampleResult['created']['body'];
    const fetched = await fetch(`${base}/vault/tokens/${token.id}`, { headers: { 'SVC-API-KEY': app.key! } });
    const own = await (await fetch(`${base}/hello`)).text();
    const result = {
      created: { status: created.status, body: token },
      fetched: { status: fetched.status, body: (await fetched.json()) as MountExampleResult['fetched']['body'] },
      own,
    };
    log('express', result.created.status, result.fetched.status, result.fetched.body.data.number);
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
