/**
 * Example: two vault instances (think: two app servers behind a load balancer) sharing one
 * PostgreSQL database.
 *
 * It connects to DATABASE_URL (or TOKENVAULT_TEST_PG_URL), in the schema tokenvault_example; the
 * test suite runs it in a fresh schema when TOKENVAULT_TEST_PG_URL is set.
 *
 * 1. Each instance opens its own store (its own connection pool) on the same database and schema;
 *    both migrate at start, and the migrations run once.
 * 2. One instance creates the tenant and a card token; the other reads it, and a deduplicating
 *    create on the other instance returns the same token.
 * All instances must share the master key: there is no key file with PostgreSQL.
 */
import { pathToFileURL } from 'node:url';
import { createVault, generateMasterKey } from 'tokenvault';
import { createPostgresStore } from 'tokenvault/postgres';

export async function main(
  print: (...items: unknown[]) => void = console.log,
  { connectionString = process.env.DATABASE_URL ?? process.env.TOKENVAULT_TEST_PG_URL, schema = 'tokenvault_example' }: { connectionString?: string; schema?: string } = {},
) {
  if (connectionString === undefined) throw new Error('set DATABASE_URL to a PostgreSQL database, e.g. postgres://postgres@127.0.0.1:5432/test');
  // Keep this secret and stable, and give every instance the same one.
  const masterKey = process.env.TOKENVAULT_MASTER_KEY ?? generateMasterKey();
  const [a, b] = await Promise.all([
    createVault({ store: createPostgresStore({ connectionString, schema }), masterKey }),
    createVault({ store: createPostgresStore({ connectionString, schema }), masterKey }),
  ]);
  try {
    const { application } = await a.createTenant({ name: 'acme' });
    const admin = await a.authenticate(application.key);
    const checkout = await a.applications.create(admin, {
      name: 'checkout',
      type: 'private',
      permissions: ['token:create', 'token:read'],
      rules: [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
    });

    const onA = await a.authenticate(checkout.key!);
    const card = await a.tokens.create(onA, {
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 },
      deduplicate_token: true,
    });
    print('instance A created', card.id);

    // Instance B knows nothing but the database: the application, its key and the token are there.
    const onB = await b.authenticate(checkout.key!);
    const read = await b.tokens.get(onB, card.id);
    const again = await b.tokens.create(onB, { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 }, deduplicate_token: true });
    print('instance B read', read.data, '- deduplicated to the same token:', again.id === card.id);
    return { created: card.id, readByOther: read.data, deduplicated: again.id === card.id };
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
