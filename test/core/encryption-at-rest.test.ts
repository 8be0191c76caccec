import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createVault } from '../../src/index.js';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { ALL_TOKEN_PERMISSIONS, REVEAL_ALL } from './helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('encryption at rest', () => {
  it('no plaintext card number, account number or string value is in the database file or its WAL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tokenvault-scan-'));
    dirs.push(dir);
    const filename = join(dir, 'vault.db');
    const vault = await createVault({ store: createSqliteStore({ filename }), masterKey: generateMasterKey(), sweepIntervalMs: 0 });
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
    await vault.tokens.create(caller, { type: 'card', data: { number: secrets.card, expiration_month: 1, expiration_year: 2032, cvc } });
    await vault.tokens.create(caller, { type: 'bank', data: { routing_number: '011000015', account_number: secrets.account } });
    await vault.tokens.create(caller, { type: 'token', data: secrets.string, deduplicate_token: true });
    await vault.tokens.create(caller, { type: 'token', data: { email: secrets.searchable }, search_indexes: ['{{ data.email }}'] });
    await vault.tokens.create(caller, { type: 'us_bank_account_number', data: secrets.account.slice(0, 12) });
    // Scan while open (WAL holds the recent writes) and again after close (checkpointed into the main file).
    const scan = () => {
      const files = readdirSync(dir).map((f) => readFileSync(join(dir, f)));
      expect(files.length).toBeGreaterThan(0);
      for (const bytes of files) {
        for (const [name, secret] of Object.entries(secrets)) {
          expect(bytes.includes(Buffer.from(secret, 'utf8')), `${name} found in plaintext`).toBe(false);
          expect(bytes.includes(Buffer.from(secret, 'utf16le')), `${name} found as UTF-16`).toBe(false);
        }
        expect(bytes.includes(Buffer.from(`"cvc":"${cvc}"`, 'utf8')), 'cvc found in plaintext').toBe(false);
        expect(bytes.includes(Buffer.from(app.key!, 'utf8')), 'API key found').toBe(false);
      }
    };
    expect(readdirSync(dir)).toContain('vault.db-wal');
    scan();
    await vault.close();
    scan();
  });
});
