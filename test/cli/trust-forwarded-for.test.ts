// `tokenvault serve --trust-forwarded-for` (docs/proxies.md, Calling a pre-configured proxy): the
// flag reaches the handler, so the inbound proxies' per-address limit counts the forwarded client,
// not the reverse proxy in front. Unknown proxy keys count against the address too, so no proxy is needed.
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli.js';

/** Runs serve in-process on :memory: with these flags, hands its URL to `use`, then stops it. */
async function withServer(flags: string[], use: (url: string) => Promise<void>): Promise<void> {
  const controller = new AbortController();
  let output = '';
  let failure: unknown;
  const code = await runCli(['serve', '--port', '0', '--db', ':memory:', '--access-log', 'off', ...flags], {
    env: { TOKENVAULT_ADMIN_KEY: 'admin-key-for-tests-0123456789' },
    stdout: (text) => (output += text),
    stderr: (text) => (output += text),
    signal: controller.signal,
    onListening: (url) =>
      void use(url)
        .catch((error: unknown) => (failure = error))
        .finally(() => controller.abort()),
  });
  if (failure !== undefined) throw failure;
  expect(code, output).toBe(0);
}

/** Statuses of `count` unauthenticated calls with an unknown proxy key, each from `forwarded(i)`. */
async function statuses(url: string, count: number, forwarded: (i: number) => string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${url}/proxy`, { headers: { 'SVC-PROXY-KEY': 'not-a-proxy-key', 'x-forwarded-for': forwarded(i) } });
    out.push(response.status);
    await response.arrayBuffer();
  }
  return out;
}

describe('serve --trust-forwarded-for', () => {
  it('counts each forwarded client on its own with the flag; without it, the socket address is counted and its header ignored', async () => {
    // 60 calls: however the fixed 1 s windows split them, one window holds more than the 20 an address may make.
    await withServer(['--trust-forwarded-for', '1'], async (url) => {
      expect(new Set(await statuses(url, 60, (i) => `198.51.100.${i}`))).toEqual(new Set([401]));
    });
    await withServer(['--trust-forwarded-for', '127.0.0.1,::1'], async (url) => {
      expect(new Set(await statuses(url, 60, (i) => `198.51.100.${i}`))).toEqual(new Set([401]));
    });
    await withServer([], async (url) => {
      expect(await statuses(url, 60, (i) => `198.51.100.${i}`)).toContain(429);
    });
  }, 30_000);
});
