/**
 * The vault mounted in Express and Fastify (docs/embedding.md), as an application does: with and
 * without the framework's body parser ahead of it. A body read before the vault got it is a 500
 * problem saying to mount the vault first; it must never hang.
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { toNodeListener } from '../../src/http/node.js';
import { describeEachStore } from '../support/stores.js';

async function listen(server: Server): Promise<string> {
  if (!server.listening) await once(server.listen(0, '127.0.0.1'), 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

describeEachStore('the vault mounted in a web framework', (store) => {
  async function vaultAndKey() {
    const vault = await store.vault();
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    return { listener: toNodeListener(createFetchHandler(vault)), key: app.key, vault };
  }

  async function createToken(base: string, key: string) {
    const response = await fetch(`${base}/vault/tokens`, {
      method: 'POST',
      headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'token', data: 'secret' }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it('Express: mounted before express.json() it answers; after it, a 500 that says to mount it first (never a hang)', async () => {
    const { listener, key, vault } = await vaultAndKey();
    const first = express();
    first.use('/vault', listener);
    first.use(express.json());
    first.post('/echo', (req, res) => void res.json(req.body));
    const before = first.listen(0, '127.0.0.1');
    const after = express();
    after.use(express.json());
    after.use('/vault', listener);
    const late = after.listen(0, '127.0.0.1');
    try {
      const base = await listen(before);
      const created = await createToken(base, key);
      expect(created.status).toBe(201);
      // The application's own routes still get their parsed bodies.
      const echo = await fetch(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
      expect(await echo.json()).toEqual({ a: 1 });

      const refused = await createToken(await listen(late), key);
      expect(refused.status).toBe(500);
      expect(refused.body.detail).toMatch(/read before it reached the vault.*express\.json\(\).*mount the vault before any body parser/);
      // Nothing was created by the refused request; a body-less request passes the parser untouched.
      expect((await vault.tokens.list(await vault.caller({ permissions: ['token:read'] }), {})).data).toHaveLength(1);
      const read = await fetch(`${await listen(late)}/vault/tokens/${String(created.body.id)}`, { headers: { 'SVC-API-KEY': key } });
      expect(read.status).toBe(200);
    } finally {
      await close(before);
      await close(late);
    }
  });

  it('Fastify: mounted with its body parsing turned off for the vault it answers; with Fastify parsing JSON, the 500', async () => {
    const { listener, key } = await vaultAndKey();
    const mount = (parse: boolean) => {
      const app = Fastify();
      void app.register(
        async (scope) => {
          if (!parse) {
            // The vault reads its own bodies: leave them unread in this scope.
            scope.removeAllContentTypeParsers();
            scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
          }
          scope.all('/*', (request, reply) => {
            reply.hijack();
            // The vault routes on the path below its prefix.
            request.raw.url = request.raw.url!.slice('/vault'.length);
            listener(request.raw, reply.raw);
          });
        },
        { prefix: '/vault' },
      );
      return app;
    };
    const good = mount(false);
    const bad = mount(true);
    try {
      const created = await createToken(await good.listen({ port: 0, host: '127.0.0.1' }), key);
      expect(created.status).toBe(201);
      expect(created.body.id).toEqual(expect.any(String));
      const refused = await createToken(await bad.listen({ port: 0, host: '127.0.0.1' }), key);
      expect(refused.status).toBe(500);
      expect(refused.body.detail).toMatch(/mount the vault before any body parser/);
    } finally {
      await good.close();
      await bad.close();
    }
  });
});
