/**
 * Example: testing code that tokenizes, with an in-memory vault and a clock the test controls.
 * In your tests, import from 'tokenvault/testing'.
 *
 * `createTestVault()` opens SQLite in memory with a random master key and one tenant; `caller()`
 * makes an application with the permissions (and rules) you name. Time only moves when you say so,
 * so expiry and the one-hour cvc lifetime are tested without waiting.
 */
import { pathToFileURL } from 'node:url';
import { createTestVault, type TestVaultOptions } from 'tokenvault/testing';

/** The code under test: stores a card and returns only its token id. */
async function saveCard(vault: Awaited<ReturnType<typeof createTestVault>>, caller: Parameters<typeof vault.tokens.create>[0], number: string) {
  const token = await vault.tokens.create(caller, { type: 'card', data: { number, cvc: '123' }, expires_at: '1/2/2030' });
  return token.id;
}

/** `store`: where the vault keeps its data (default SQLite in memory; the tests pass each store). */
export async function main(print: (...items: unknown[]) => void = console.log, store?: TestVaultOptions['store']) {
  const vault = await createTestVault({ store, start: '2030-01-01T00:00:00Z' });
  try {
    const app = await vault.caller({
      permissions: ['token:create', 'token:read'],
      rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
    });
    const id = await saveCard(vault, app, '4242424242424242');
    const fresh = await vault.tokens.get(app, id);
    vault.clock.advance(60 * 60 * 1000); // one hour: the cvc is gone
    const afterAnHour = await vault.tokens.get(app, id);
    vault.clock.set('2030-01-02T00:00:00Z'); // the token expires
    const expired = await vault.tokens.get(app, id).then(
      () => 'still there',
      (error: Error) => error.name,
    );
    const swept = await vault.sweep();
    print({ fresh: fresh.data, afterAnHour: afterAnHour.data, expired, swept });
    return { fresh: fresh.data, afterAnHour: afterAnHour.data, expired, swept };
  } finally {
    await vault.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
