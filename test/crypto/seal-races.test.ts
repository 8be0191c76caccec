/**
 * Unsealing's edges that no single call shows (docs/key-custody.md): a seal that comes in while
 * the last share is being combined stays a seal, and `tokenvault unseal` sends no share to a
 * socket someone else could have bound.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { callAdminSocket } from '../../src/cli/admin-socket.js';
import { splitMasterKey } from '../../src/crypto/key-shares.js';
import { SealableKeyProvider } from '../../src/crypto/sealable-key-provider.js';

it('a seal given while the threshold share is being combined is not undone by it', async () => {
  const { lines, record } = await splitMasterKey(randomBytes(32), 3, 2);
  const provider = new SealableKeyProvider(record);
  await provider.submit(lines[0]!);
  const last = provider.submit(lines[1]!);
  // The combination awaits; the seal lands before it ends.
  await Promise.resolve();
  await Promise.resolve();
  provider.seal();
  expect((await last).sealed).toBe(true);
  expect(provider.status()).toEqual({ sealed: true, threshold: 2, given: 0 });
});

it('unseal refuses a socket open to other users, or in a directory they may write, before sending anything', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tv-socket-'));
  const path = join(dir, 'admin.sock');
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  try {
    chmodSync(path, 0o666);
    await expect(callAdminSocket(path, 'POST', '/unseal', { share: 'tvshare1.x' })).rejects.toThrow(/is open to other users \(mode 666\): shares are not sent to it/);
    chmodSync(path, 0o600);
    chmodSync(dir, 0o777);
    await expect(callAdminSocket(path, 'POST', '/unseal', { share: 'tvshare1.x' })).rejects.toThrow(/directory .* is writable by other users/);
    expect(connections).toBe(0);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  }
});
