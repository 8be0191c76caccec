import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../support/ensure-built.js';
import { ADMIN_KEY, api, runCliProcess, startCli } from './helpers.js';

const VISA = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
let dir: string;

beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-cli-'));
}, 120_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('tokenvault serve (the built CLI as a child process)', () => {
  it('bootstraps with TOKENVAULT_ADMIN_KEY, runs token and reactor round trips over HTTP, drains on SIGTERM and exits 0', async () => {
    // A slow upstream that the reactor calls: it holds its answer until the test releases it.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const upstreamReached = new Promise<void>((resolve) => (reached = resolve));
    const upstream = createServer((_req, res) => {
      reached();
      void released.then(() => res.end(JSON.stringify({ approved: true })));
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

    const cli = await startCli(['serve', '--port', '0', '--db', ':memory:', '--allow-private-network', '--allow-host', '127.0.0.1'], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY });
    try {
      expect(cli.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(cli.url.endsWith(':0')).toBe(false);
      // The admin key was given, so it is not printed.
      expect(cli.stdout()).not.toContain(ADMIN_KEY);

      const health = await fetch(`${cli.url}/healthz`);
      expect(health.status).toBe(200);

      const app = await api(cli.url, ADMIN_KEY, 'POST', '/applications', {
        name: 'checkout',
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:use'],
      });
      expect(app.status).toBe(201);
      const key = app.body.key as string;

      const token = await api(cli.url, key, 'POST', '/tokens', { type: 'card', data: VISA });
      expect(token.status).toBe(201);
      const got = await api(cli.url, key, 'GET', `/tokens/${token.body.id}`);
      expect(got.status).toBe(200);
      expect(got.body.data.number).toBe('XXXXXXXXXXXX4242');

      const formula = await api(cli.url, ADMIN_KEY, 'POST', '/reactor-formulas', {
        name: 'charge',
        code: `module.exports = async (req) => {
          const response = await fetch(req.configuration.url, { method: 'POST', body: JSON.stringify({ last4: req.args.card.number.slice(-4) }) });
          return { raw: { upstream: await response.json(), last4: req.args.card.number.slice(-4) } };
        }`,
        configuration: [{ name: 'url', type: 'string' }],
        request_parameters: [{ name: 'card', type: 'object' }],
      });
      expect(formula.status).toBe(201);
      const reactor = await api(cli.url, ADMIN_KEY, 'POST', '/reactors', { name: 'charge', formula: { id: formula.body.id }, configuration: { url: upstreamUrl } });
      expect(reactor.status).toBe(201);

      // Invoke, and send SIGTERM while the invocation is in flight: it must complete.
      const invocation = api(cli.url, key, 'POST', `/reactors/${reactor.body.id}/react`, { args: { card: `{{ ${token.body.id} }}` } });
      await upstreamReached;
      cli.child.kill('SIGTERM');
      release();
      const result = await invocation;
      expect(result.status).toBe(200);
      expect(result.body).toEqual({ raw: { upstream: { approved: true }, last4: '4242' } });
      expect(await cli.exited).toBe(0);
      // Stopped accepting.
      await expect(fetch(`${cli.url}/healthz`)).rejects.toThrow();
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      upstream.close();
    }
  });

  it('a file database: generates a 0600 key file and an admin key printed once, and reuses both on restart', async () => {
    const db = join(dir, 'vault.db');
    const first = await startCli(['serve', '--port', '0', '--db', db]);
    let adminKey: string;
    let tokenId: string;
    try {
      expect(first.stdout()).toContain(`admin API key written to ${db}.admin-key (mode 0600)`);
      expect(statSync(`${db}.admin-key`).mode & 0o777).toBe(0o600);
      adminKey = readFileSync(`${db}.admin-key`, 'utf8').trim();
      expect(first.stdout()).not.toContain(adminKey);
      expect(first.stderr()).toMatch(/generated a master key in .*vault\.db\.key/);
      expect(statSync(`${db}.key`).mode & 0o777).toBe(0o600);
      const app = await api(first.url, adminKey, 'POST', '/applications', { name: 'a', type: 'private', permissions: ['token:create', 'token:read'] });
      const token = await api(first.url, app.body.key, 'POST', '/tokens', { type: 'token', data: 'persisted-value', id: 'kept' });
      tokenId = token.body.id;
      expect(tokenId).toBe('kept');
      first.child.kill('SIGINT');
      expect(await first.exited).toBe(0);

      const second = await startCli(['serve', '--port', '0', '--db', db]);
      try {
        expect(second.stdout()).not.toMatch(/admin API key/);
        expect(readFileSync(`${db}.admin-key`, 'utf8').trim()).toBe(adminKey);
        expect(second.stderr()).not.toMatch(/generated a master key/);
        const apps = await api(second.url, adminKey, 'GET', '/applications');
        expect(apps.status).toBe(200);
        const reader = await api(second.url, adminKey, 'POST', '/applications', { name: 'r', type: 'private', permissions: ['token:read'] });
        const kept = await api(second.url, reader.body.key, 'GET', '/tokens/kept');
        expect(kept.status).toBe(200);
        second.child.kill('SIGTERM');
        expect(await second.exited).toBe(0);
      } finally {
        if (second.child.exitCode === null) second.child.kill('SIGKILL');
      }

      const rotated = await runCliProcess(['keys', 'rotate', '--db', db]);
      expect(rotated.code).toBe(0);
      expect(rotated.stdout).toMatch(/data key version 2, 1 tokens re-encrypted/);
      const migrated = await runCliProcess(['migrate', '--db', db]);
      expect(migrated.code).toBe(0);
    } finally {
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
    }
  });

  it('holds its SQLite file exclusively: another command gets a clear error; --shared-db lets it in', async () => {
    const db = join(dir, 'exclusive.db');
    const env = { TOKENVAULT_ADMIN_KEY: ADMIN_KEY };
    const exclusive = await startCli(['serve', '--port', '0', '--db', db], env);
    try {
      const refused = await runCliProcess(['migrate', '--db', db]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/another process holds it .*--shared-db/);
      // The server itself keeps working.
      expect((await api(exclusive.url, ADMIN_KEY, 'GET', '/applications')).status).toBe(200);
    } finally {
      exclusive.child.kill('SIGTERM');
      await exclusive.exited;
    }
    const shared = await startCli(['serve', '--port', '0', '--db', db, '--shared-db'], env);
    try {
      const migrated = await runCliProcess(['migrate', '--db', db]);
      expect(migrated.code).toBe(0);
      expect((await api(shared.url, ADMIN_KEY, 'GET', '/applications')).status).toBe(200);
    } finally {
      shared.child.kill('SIGTERM');
      await shared.exited;
    }
  }, 30_000);

  it('--header-prefix BT: keys come in BT-API-KEY', async () => {
    const cli = await startCli(['serve', '--port', '0', '--db', ':memory:', '--header-prefix', 'BT'], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY });
    try {
      const bt = await fetch(`${cli.url}/applications`, { headers: { 'BT-API-KEY': ADMIN_KEY } });
      expect(bt.status).toBe(200);
      const svc = await fetch(`${cli.url}/applications`, { headers: { 'SVC-API-KEY': ADMIN_KEY } });
      expect(svc.status).toBe(401);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });
});
