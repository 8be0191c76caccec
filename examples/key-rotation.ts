/**
 * Example: rotating a tenant's data key and re-encrypting its tokens, with progress.
 * New writes use the newest key at once; older tokens stay readable until re-encrypted.
 * Key management is an operator tool: `openOperator` (tokenvault/operator) opens the vault and hands
 * the tools out beside it; the vault itself has none. The CLI does the same with
 * `tokenvault keys rotate --db ./tokenvault.db`.
 */
import { pathToFileURL } from 'node:url';
import { generateMasterKey } from 'tokenvault';
import { openOperator } from 'tokenvault/operator';
import { createSqliteStore } from 'tokenvault/sqlite';
import type { Store } from 'tokenvault/store';

/** `store`: makes the store the vault keeps its data in (default SQLite in memory; the tests pass each store). */
export async function main(print: (...items: unknown[]) => void = console.log, store: () => Store = () => createSqliteStore({ filename: ':memory:' })) {
  const operator = await openOperator({ store: store(), masterKey: generateMasterKey() });
  // The application gets `operator.vault` only: every call on it takes a Caller.
  const { vault } = operator;
  try {
    const { tenant, application } = await vault.createTenant({ name: 'acme' });
    const admin = await vault.authenticate(application.key);
    const writer = await vault.applications.create(admin, { name: 'writer', type: 'private', permissions: ['token:create', 'token:read'] });
    const app = await vault.authenticate(writer.key);
    for (let i = 0; i < 250; i++) await vault.tokens.create(app, { type: 'token', data: `secret-${i}` });
    const version = await operator.keys.rotate(tenant.id);
    const progress: string[] = [];
    const moved = await operator.keys.reencrypt(tenant.id, {
      batchSize: 100,
      onProgress: ({ done, total }) => progress.push(`${done}/${total}`),
    });
    print(`data key v${version}; re-encrypted ${moved} tokens (${progress.join(', ')})`);
    return { version, moved, progress };
  } finally {
    await operator.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
