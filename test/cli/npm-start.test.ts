/**
 * `npm start` under a supervisor (docs/embedding.md): Docker and systemd signal the process they
 * started, npm; the server must get the signal, drain and free its port (and SQLite lock), rather
 * than outlive npm behind a shell.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { beforeAll, expect, it } from 'vitest';
import { ROOT, ensureBuilt } from '../support/ensure-built.js';

beforeAll(() => ensureBuilt(), 180_000);

it('SIGTERM to npm reaches the server npm start runs: it drains, exits 0 and frees its port', async () => {
  const npm = spawn('npm', ['start', '--silent', '--', '--port', '0', '--db', ':memory:'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  npm.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = once(npm, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const url = await new Promise<URL>((resolve, reject) => {
    npm.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(new URL(match[1]!));
    });
    void exited.then(([code]) => reject(new Error(`npm start exited with ${code} before listening:\n${out}\n${err}`)));
  });
  expect((await fetch(new URL('/healthz', url))).status).toBe(200);

  npm.kill('SIGTERM');
  const [code] = await exited;
  expect(err).toContain('tokenvault: shutting down');
  expect(code).toBe(0);
  // The port is free once npm is gone: the server did not outlive it.
  const probe = createServer();
  probe.listen(Number(url.port), url.hostname);
  await once(probe, 'listening');
  await new Promise((resolve) => probe.close(resolve));
}, 90_000);
