/**
 * Example: rotating a tenant's data key and re-encrypting its tokens, with progress.
 * New writes use the newest key at once; older tokens stay readable until re-encrypted.
 * The CLI does the same with `tokenvault keys rotate --db ./tokenvault.db`.
 */
import { pathToFileURL } from 'node:url';
import { createTestVault, type TestVaultOptions } from 'tokenvault/testing';

/** `store`: where the vault keeps its data (default SQLite in memory; the tests pass each store). */
export async function main(print: (...items: unknown[]) => void = console.log, store?: TestVaultOptions['store']) {
  const vault = await createTestVault({ store });
  try {
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    for (let i = 0; i < 250; i++) await vault.tokens.create(app, { type: 'token', data: `secret-${i}` });
    const version = await vault.keys.rotate(vault.tenantId);
    const progress: string[] = [];
    const moved = await vault.keys.reencrypt(vault.tenantId, {
      batchSize: 100,
      onProgress: ({ done, total }) => progress.push(`${done}/${total}`),
    });
    print(`data key v${version}; re-encrypted ${moved} tokens (${progress.join(', ')})`);
    return { version, moved, progress };
  } finally {
    await vault.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
