// A test of code that uses tokenvault may install fake timers; writes that wait for the end of an
// event-loop turn (group commit, batched HTTP responses) must not wait for the test's fake clock.
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { toNodeListener } from '../../src/http/node.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { SUITE_START } from '../support/suite-start.js';

let vault: TestVault | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await vault?.close();
  vault = undefined;
});

describe('tokenvault under fake timers (vi.useFakeTimers)', () => {
  it('completes concurrent creations, which are group-committed at the end of the turn', async () => {
    vault = await createTestVault({ start: SUITE_START });
    const caller = await vault.caller({ permissions: ['token:create'] });
    vi.useFakeTimers();
    const created = await Promise.all(['a', 'b', 'c'].map((data) => vault!.tokens.create(caller, { type: 'token', data })));
    expect(new Set(created.map((token) => token.id)).size).toBe(3);
  });

  it('answers HTTP requests through toNodeListener, which writes at the end of the turn', async () => {
    vault = await createTestVault({ start: SUITE_START });
    const server = createServer(toNodeListener(createFetchHandler(vault)));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    vi.useFakeTimers();
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/healthz' }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(200);
    } finally {
      vi.useRealTimers();
      server.closeAllConnections();
      server.close();
    }
  });
});
