/**
 * Example: the vault in-process, on an embedded SQLite file.
 *
 * 1. Open a vault with a master key (32 bytes, base64) and create a tenant; its first application
 *    is a management application, whose key is shown once.
 * 2. Create a private application whose rules reveal /pci/ data, and one that only sees masks.
 * 3. Tokenize a card, read it back revealed and masked, deduplicate it, search and list by metadata.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createVault, generateMasterKey } from 'tokenvault';
import { createSqliteStore } from 'tokenvault/sqlite';

export async function main(print: (...items: unknown[]) => void = console.log) {
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-example-'));
  const vault = await createVault({
    store: createSqliteStore({ filename: join(dir, 'vault.db') }),
    // Keep this secret and stable: without it, nothing in the database can be decrypted.
    masterKey: process.env.TOKENVAULT_MASTER_KEY ?? generateMasterKey(),
  });
  try {
    const { application } = await vault.createTenant({ name: 'acme' });
    const admin = await vault.authenticate(application.key);

    const checkout = await vault.applications.create(admin, {
      name: 'checkout',
      type: 'private',
      permissions: ['token:create', 'token:read', 'token:search', 'token:update', 'token:delete'],
      rules: [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:search', 'token:update', 'token:delete'] }],
    });
    const support = await vault.applications.create(admin, { name: 'support desk', type: 'private', permissions: ['token:read'] });
    const asCheckout = await vault.authenticate(checkout.key!);
    const asSupport = await vault.authenticate(support.key!);

    const card = await vault.tokens.create(asCheckout, {
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' },
      metadata: { customer: 'cus_42' },
      search_indexes: ['{{ data.number | last4 }}'],
      deduplicate_token: true,
    });
    print('created', card.id, card.containers);

    const revealed = await vault.tokens.get(asCheckout, card.id);
    const masked = await vault.tokens.get(asSupport, card.id);
    print('revealed to checkout:', revealed.data);
    print('masked for support:', masked.data);

    const again = await vault.tokens.create(asCheckout, { type: 'card', data: { number: '4242424242424242' }, deduplicate_token: true });
    print('deduplicated:', again.id === card.id, again._extras);

    const found = await vault.tokens.search(asCheckout, { query: 'data:4242 AND type:card' });
    const listed = await vault.tokens.list(asCheckout, { metadata: { customer: 'CUS_42' } });
    print('search hits:', found.data.length, 'list by metadata:', listed.data.length);

    await vault.tokens.delete(asCheckout, card.id);
    return { card, revealed, masked, deduplicated: again.id === card.id, found: found.data.length, listed: listed.data.length };
  } finally {
    await vault.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
