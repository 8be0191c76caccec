/**
 * Example: the vault's fetch handler mounted under `/vault` in a Hono application, served by
 * `@hono/node-server`. Hono speaks fetch already, so no adapter is needed: `app.mount` strips the
 * base path and hands the Request to the vault. The same `app.fetch` runs on Bun, Deno or workers.
 */
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createVault, generateMasterKey } from 'tokenvault';
import { createFetchHandler } from 'tokenvault/http';
import { createSqliteStore } from 'tokenvault/sqlite';
import type { MountExampleResult } from './mount-node-http.js';

export async function main(log: (...items: unknown[]) => void = console.log): Promise<MountExampleResult & { own: string }> {
  const vault = await createVault({ store: createSqliteStore({ filename: ':memory:' }), masterKey: generateMasterKey() });
  const { application: admin } = await vault.createTenant({ name: 'example' });
  const app = await vault.applications.create(await vault.authenticate(admin.key), {
    name: 'checkout',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  });

  const web = new Hono();
  web.get('/hello', (c) => c.json({ hello: 'world' }));
  web.mount('/vault', createFetchHandler(vault));
  const { server, port } = await new Promise<{ server: ReturnType<typeof serve>; port: number }>((resolve) => {
    const server = serve({ fetch: web.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve({ server, port: info.port }));
  });
  const base = `http://127.0.0.1:${port}`;
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
    log('hono', result.created.status, result.fetched.status, result.fetched.body.data.number);
    return result;
  } finally {
    await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    await vault.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
