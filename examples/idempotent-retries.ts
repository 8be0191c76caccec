/**
 * Example: retrying a call safely with an idempotency key, in process. A job that tokenizes an
 * order's card may run twice (a crash after the work, a queue delivering again); with the order id
 * as the key the second run gets the first run's token instead of making another.
 *
 * Over HTTP the same service answers the `<PREFIX>-IDEMPOTENCY-KEY` header.
 */
import { pathToFileURL } from 'node:url';
import { createTestVault, type TestVaultOptions } from 'tokenvault/testing';

/** `store`: where the vault keeps its data (default SQLite in memory; the tests pass each store). */
export async function main(print: (...items: unknown[]) => void = console.log, store?: TestVaultOptions['store']) {
  const vault = await createTestVault({ store });
  try {
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const order = { id: 'order-1001', card: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 } };
    const tokenizeOrder = () =>
      vault.idempotency.run(
        app,
        // The fingerprint names the request: the same key with other input is refused (a 422), not replayed.
        { key: order.id, fingerprint: JSON.stringify(order) },
        () => vault.tokens.create(app, { type: 'card', data: order.card }),
      );
    const first = await tokenizeOrder();
    const retried = await tokenizeOrder();
    const tokens = (await vault.tokens.list(app, {})).data.length;
    const summary = { sameToken: first.result.id === retried.result.id, replayed: retried.replayed, tokens };
    print(summary);
    return summary;
  } finally {
    await vault.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
