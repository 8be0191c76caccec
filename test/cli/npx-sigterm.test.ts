/**
 * `npx tokenvault serve` under a supervisor (docs/production.md, Supervisors): the supervisor sends
 * SIGTERM to the process it started, npx. Whether or not npm passes it on, the server must stop
 * (src/cli/parent-watch.ts) and free its port, never keep serving behind a gone npm.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { beforeAll, expect, it } from 'vitest';
import { watchParent } from '../../src/cli/parent-watch.js';
import { ROOT, ensureBuilt } from '../support/ensure-built.js';

beforeAll(() => ensureBuilt(), 180_000);

it('SIGTERM to npx stops the server it started: the server closes its output and frees its port', async () => {
  const npx = spawn('npx', ['--no-install', 'tokenvault', 'serve', '--port', '0', '--db', ':memory:'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  npx.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  // The server writes to the same pipes: they close only once npx and the server have both exited.
  const outputClosed = once(npx.stdout, 'close');
  const exited = once(npx, 'exit');
  const url = await new Promise<URL>((resolve, reject) => {
    npx.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(new URL(match[1]!));
    });
    void exited.then(() => reject(new Error(`npx exited before listening:\n${out}\n${err}`)));
  });
  expect((await fetch(new URL('/healthz', url))).status).toBe(200);

  npx.kill('SIGTERM');
  await exited;
  await outputClosed;
  expect(err).toMatch(/tokenvault: (shutting down|the npm process that started this server is gone)/);
  const probe = createServer();
  probe.listen(Number(url.port), url.hostname);
  await once(probe, 'listening');
  await new Promise((resolve) => probe.close(resolve));
}, 90_000);

it('the watch fires once when the parent process id changes, and not before', () => {
  let parent = 100;
  let gone = 0;
  const ticks: (() => void)[] = [];
  const realSetInterval = globalThis.setInterval;
  // The watch's own timer, driven by hand: no waiting on the wall clock.
  globalThis.setInterval = ((fn: () => void) => {
    ticks.push(fn);
    return { unref: () => undefined } as unknown as NodeJS.Timeout;
  }) as typeof setInterval;
  try {
    const stop = watchParent(
      () => gone++,
      () => parent,
    );
    ticks[0]!();
    expect(gone).toBe(0);
    parent = 1;
    ticks[0]!();
    expect(gone).toBe(1);
    stop();
  } finally {
    globalThis.setInterval = realSetInterval;
  }
});
