import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { exportAudit } from '../../src/audit/audit-export.js';
import { createVault } from '../../src/index.js';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { MIGRATIONS, runMigrations } from '../../src/storage/sqlite/migrations.js';
import { ALL_TOKEN_PERMISSIONS, REVEAL_ALL } from '../support/tokens.js';
import { makeIdempotentRevealingRequests } from '../support/idempotent-requests.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('encryption at rest', () => {
  it('no plaintext card number, account number, string value, proxy configuration or proxy key is in the database file or its WAL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tokenvault-scan-'));
    dirs.push(dir);
    const filename = join(dir, 'vault.db');
    // The proxy's destination is a fetch of the test's own: what it was sent is checked below.
    const sent: string[] = [];
    const destination = (async (_url: unknown, init?: RequestInit) => {
      sent.push(new TextDecoder().decode(init?.body as Uint8Array));
      return new Response('{"ok":true}', { status: 200 });
    }) as typeof fetch;
    const store = createSqliteStore({ filename });
    const vault = await createVault({ store, masterKey: generateMasterKey(), sweepIntervalMs: 0, proxy: { unsafeFetch: destination } });
    const { application } = await vault.createTenant({ name: 'scan' });
    const admin = await vault.authenticate(application.key);
    const app = await vault.applications.create(admin, { name: 'w', type: 'private', permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL });
    const caller = await vault.authenticate(app.key!);
    const secrets = {
      card: '4111111111111111',
      account: '98765432101234',
      string: 'correct-horse-battery-staple',
      searchable: 'jane.secret@example.com',
    };
    // Four digits turn up by chance in UUIDs and base64 text, so the cvc is looked for as the JSON
    // the data would be stored as in the clear.
    const cvc = '7319';
    const cardToken = await vault.tokens.create(caller, { type: 'card', data: { number: secrets.card, expiration_month: 1, expiration_year: 2032, cvc } });
    await vault.tokens.create(caller, { type: 'bank', data: { routing_number: '011000015', account_number: secrets.account } });
    await vault.tokens.create(caller, { type: 'token', data: secrets.string, deduplicate_token: true });
    await vault.tokens.create(caller, { type: 'token', data: { email: secrets.searchable }, search_indexes: ['{{ data.email }}'] });
    await vault.tokens.create(caller, { type: 'us_bank_account_number', data: secrets.account.slice(0, 12) });
    // A proxied request carries the card to its destination; only ids and names stay behind (audit).
    const proxier = await vault.authenticate(
      (await vault.applications.create(admin, { name: 'p', type: 'private', permissions: ['token:use', 'proxy:invoke'], rules: REVEAL_ALL })).key!,
    );
    const proxied = await vault.proxy(proxier, {
      method: 'POST',
      url: 'https://api.example.com',
      path: '/charges',
      query: `?secret=${secrets.searchable}`,
      headers: { 'content-type': 'application/json', 'x-card': `{{ ${cardToken.id} | json: '$.number' }}` },
      body: JSON.stringify({ number: `{{ ${cardToken.id} | json: '$.number' }}` }),
    });
    expect(proxied.status).toBe(200);
    expect(sent[0]).toContain(secrets.card);
    // A pre-configured proxy's configuration holds secrets (sealed) and its key (hashed).
    const proxySecret = 'sk_live_configured_proxy_secret';
    const configured = await vault.proxies.create(admin, { name: 'charges', destination_url: 'https://api.example.com/v1/', configuration: { API_KEY: proxySecret } });
    await vault.proxies.patch(admin, configured.id, { configuration: { OTHER: 'second-proxy-configuration-secret' } });
    const rotated = await vault.proxies.rotateKey(admin, configured.id);
    Object.assign(secrets, { proxySecret, otherProxySecret: 'second-proxy-configuration-secret', proxyKey: configured.key!, rotatedProxyKey: rotated.key! });
    const { card, apiKey } = await makeIdempotentRevealingRequests(vault, app.key!, application.key);
    Object.assign(secrets, { idempotentCard: card.number, idempotentApiKey: apiKey });
    // Token intents (docs/token-intents.md): their data is sealed like token data.
    const browserApp = await vault.applications.create(admin, { name: 'browser', type: 'public', permissions: ['token-intent:create'] });
    const browser = await vault.authenticate(browserApp.key!);
    const intentSecrets = { intentCard: '4000056655665556', intentString: 'intent-battery-horse-staple' };
    await vault.tokenIntents.create(browser, { type: 'card', data: { number: intentSecrets.intentCard, cvc: '9153' } });
    await vault.tokenIntents.create(browser, { type: 'token', data: intentSecrets.intentString });
    Object.assign(secrets, intentSecrets);
    const cvcs = [cvc, card.cvc, '9153'];
    // Scan while open (WAL holds the recent writes) and again after close (checkpointed into the main file).
    const scan = () => {
      const files = readdirSync(dir).map((f) => readFileSync(join(dir, f)));
      expect(files.length).toBeGreaterThan(0);
      for (const bytes of files) {
        for (const [name, secret] of Object.entries(secrets)) {
          expect(bytes.includes(Buffer.from(secret, 'utf8')), `${name} found in plaintext`).toBe(false);
          expect(bytes.includes(Buffer.from(secret, 'utf16le')), `${name} found as UTF-16`).toBe(false);
        }
        for (const value of cvcs) expect(bytes.includes(Buffer.from(`"cvc":"${value}"`, 'utf8')), 'cvc found in plaintext').toBe(false);
        expect(bytes.includes(Buffer.from(app.key!, 'utf8')), 'API key found').toBe(false);
      }
    };
    expect(readdirSync(dir)).toContain('vault.db-wal');
    // Every audit entry written and sealed (the chain's columns in the file), then exported (docs/audit.md).
    await vault.logs.list(admin);
    let exported = '';
    expect(await exportAudit(store, 0, (line) => void (exported += line))).toBeGreaterThan(0);
    for (const [name, secret] of Object.entries(secrets)) expect(exported.includes(secret), `${name} in the audit export`).toBe(false);
    expect(exported.includes(app.key!), 'API key in the audit export').toBe(false);
    scan();
    await vault.close();
    scan();
  });

  it('idempotency records written in the clear before migration 3 leave no trace in the file or its WAL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tokenvault-scan-'));
    dirs.push(dir);
    const filename = join(dir, 'vault.db');
    const plaintext = '{"data":{"number":"4000056655665556","cvc":"9753"}}';
    const old = new Database(filename);
    old.pragma('journal_mode = WAL');
    runMigrations(old, MIGRATIONS.slice(0, 2));
    old.prepare("INSERT INTO idempotency_keys VALUES ('t', 'a', 'k', 'h', 'done', 201, ?, 0, 9999999999999)").run(plaintext);
    old.close();
    expect(readFileSync(filename).includes(Buffer.from(plaintext))).toBe(true); // the old layout does hold it
    const store = createSqliteStore({ filename });
    const vault = await createVault({ store, masterKey: generateMasterKey(), sweepIntervalMs: 0 });
    expect(store.database.prepare('SELECT count(*) AS n FROM idempotency_keys').get()).toEqual({ n: 0 });
    const scan = () => {
      for (const f of readdirSync(dir)) expect(readFileSync(join(dir, f)).includes(Buffer.from('4000056655665556')), `found in ${f}`).toBe(false);
    };
    scan();
    await vault.close();
    scan();
  });
});
