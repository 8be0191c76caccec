import { afterEach, beforeEach, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../../src/postgres.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { adminPool, dropSchema, freshSchema } from '../support/postgres.js';
import { describePostgres } from '../support/stores.js';
import { ALL_TOKEN_PERMISSIONS, REVEAL_ALL } from '../support/tokens.js';
import { makeIdempotentRevealingRequests } from '../support/idempotent-requests.js';
import { SUITE_START } from '../support/suite-start.js';

/*
 * What only PostgreSQL can show: its tables hold no plaintext. The behaviour on PostgreSQL (token
 * round trips, reactors, sweep) is the shared suites' (describeEachStore), not copied here.
 */

describePostgres('vault on PostgreSQL', (url) => {
  let vault: TestVault;
  let store: PostgresStore;
  beforeEach(async () => {
    store = createPostgresStore({ connectionString: url, schema: freshSchema('vault'), max: 4 });
    vault = await createTestVault({ start: SUITE_START, store });
  });
  afterEach(async () => {
    await vault.close();
    await dropSchema(store.schema);
  });

  /** Every row of every table of the store's schema, as PostgreSQL's text form of the row. */
  const dumpSchema = async (): Promise<string> => {
    const tables = await adminPool().query('SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename', [store.schema]);
    expect(tables.rows.map((r) => r.tablename)).toContain('tokens');
    let text = '';
    for (const { tablename } of tables.rows) {
      const { rows } = await adminPool().query(`SELECT t::text AS row FROM "${store.schema}"."${tablename}" t`);
      text += rows.map((r) => r.row).join('\n') + '\n';
    }
    return text;
  };

  it('stores no plaintext: no table row holds the card number, account number, strings, cvc, proxy configuration or proxy key', async () => {
    const revealer = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL });
    const secrets = { card: '4111111111111111', account: '98765432101234', string: 'correct-horse-battery-staple', searchable: 'jane.secret@example.com' };
    const cvc = '7319';
    await vault.tokens.create(revealer, { type: 'card', data: { number: secrets.card, expiration_month: 1, expiration_year: 2032, cvc } });
    await vault.tokens.create(revealer, { type: 'bank', data: { routing_number: '011000015', account_number: secrets.account } });
    await vault.tokens.create(revealer, { type: 'token', data: secrets.string, deduplicate_token: true, metadata: { kind: 'string' } });
    await vault.tokens.create(revealer, { type: 'token', data: { email: secrets.searchable }, search_indexes: ['{{ data.email }}'] });
    const { card, apiKey } = await makeIdempotentRevealingRequests(vault, revealer.key, vault.adminKey);
    Object.assign(secrets, { idempotentCard: card.number, idempotentApiKey: apiKey });
    // Token intents (docs/token-intents.md): their data is sealed like token data.
    const browser = await vault.caller({ type: 'public', permissions: ['token-intent:create'] });
    const intentSecrets = { intentCard: '4000056655665556', intentString: 'intent-battery-horse-staple' };
    const intent = await vault.tokenIntents.create(browser, { type: 'card', data: { number: intentSecrets.intentCard, cvc: '9153' } });
    await vault.tokenIntents.create(browser, { type: 'token', data: intentSecrets.intentString });
    Object.assign(secrets, intentSecrets);
    // A pre-configured proxy: its configuration secrets sealed (merged by a patch too), its keys hashed (the rotated one too).
    const admin = await vault.authenticate(vault.adminKey);
    const proxySecret = 'sk_live_configured_proxy_secret';
    const configured = await vault.proxies.create(admin, { name: 'charges', destination_url: 'https://api.example.com/v1/', configuration: { API_KEY: proxySecret } });
    await vault.proxies.patch(admin, configured.id, { configuration: { OTHER: 'second-proxy-configuration-secret' } });
    const rotated = await vault.proxies.rotateKey(admin, configured.id);
    Object.assign(secrets, { proxySecret, otherProxySecret: 'second-proxy-configuration-secret', proxyKey: configured.key!, rotatedProxyKey: rotated.key! });
    // Every audit entry written and sealed first, so the dump holds the chain's columns and heads too.
    await vault.logs.list(admin);
    const text = await dumpSchema();
    expect(text).toContain('token:create'); // the audit log is dumped too
    // The audit export (docs/audit.md) carries ids and operations, never the data.
    let exported = '';
    expect(await vault.operator.audit.export(0, (line) => void (exported += line))).toBeGreaterThan(0);
    for (const [name, secret] of Object.entries(secrets)) expect(exported.includes(secret), `${name} in the audit export`).toBe(false);
    expect(exported.includes(vault.adminKey), 'API key in the audit export').toBe(false);
    expect(text).toContain(configured.id); // the proxies table is dumped too
    expect(text).toContain(intent.id); // the intents table is dumped too
    expect(text.includes('"cvc":"9153"'), 'intent cvc found in plaintext').toBe(false);
    expect(text).toContain('scan-create'); // idempotency rows are dumped too
    expect(text).toContain('kind'); // the dump does read the rows (metadata is stored in the clear)
    for (const [name, secret] of Object.entries(secrets)) {
      expect(text.includes(secret), `${name} found in plaintext`).toBe(false);
      // bytea columns read back as hex: a secret written there unsealed shows only as its hex.
      expect(text.includes(Buffer.from(secret, 'utf8').toString('hex')), `${name} found in plaintext (bytea)`).toBe(false);
    }
    // Four digits turn up by chance in ids and hex, so the cvc is looked for as stored JSON.
    for (const value of [cvc, card.cvc]) expect(text.includes(`"cvc":"${value}"`), 'cvc found in plaintext').toBe(false);
    expect(text.includes(vault.adminKey), 'API key found').toBe(false);
  });
});
