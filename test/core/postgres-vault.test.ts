import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/errors.js';
import { createPostgresStore, type PostgresStore } from '../../src/postgres.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { PG_SKIP_REASON, PG_URL, adminPool, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';
import { ALL_TOKEN_PERMISSIONS, CARD, REVEAL_ALL } from './helpers.js';
import { makeIdempotentRevealingRequests } from '../support/idempotent-requests.js';

const HOUR = 3_600_000;

if (PG_URL === undefined) {
  describe.skip(`vault on PostgreSQL (${PG_SKIP_REASON})`, () => {
    it('round-trips tokens, applications and reactors, and stores no plaintext', () => undefined);
  });
} else {
  const url = PG_URL;
  describe('vault on PostgreSQL', () => {
    let vault: TestVault;
    let store: PostgresStore;
    afterAll(endAdmin);
    beforeEach(async () => {
      store = createPostgresStore({ connectionString: url, schema: freshSchema('vault'), max: 4 });
      vault = await createTestVault({ store });
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

    it('round-trips tokens: create, get revealed and masked, list, search, update, delete', async () => {
      const revealer = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL, name: 'revealer' });
      const masker = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, name: 'masker' });
      const card = await vault.tokens.create(revealer, {
        type: 'card',
        data: CARD,
        metadata: { Customer: 'cus_42' },
        search_indexes: ['{{ data.number | last4 }}'],
        deduplicate_token: true,
      });
      expect((await vault.tokens.get(revealer, card.id)).data).toEqual(CARD);
      expect((await vault.tokens.get(masker, card.id)).data).toMatchObject({ number: 'XXXXXXXXXXXX4242' });
      const again = await vault.tokens.create(revealer, { type: 'card', data: CARD, deduplicate_token: true });
      expect(again.id).toBe(card.id);

      const other = await vault.tokens.create(revealer, { type: 'token', data: 'plain', metadata: { customer: 'cus_7' } });
      expect((await vault.tokens.list(revealer, { metadata: { customer: 'CUS_42' } })).data.map((t) => t.id)).toEqual([card.id]);
      expect((await vault.tokens.list(revealer, { size: 1 })).pagination).toMatchObject({ page_size: 1, next: expect.any(String) });
      expect((await vault.tokens.list(revealer, { page: 2, size: 1 })).data.map((t) => t.id)).toEqual([other.id]);
      expect((await vault.tokens.search(revealer, { query: 'data:4242 AND type:card' })).data.map((t) => t.id)).toEqual([card.id]);

      const updated = await vault.tokens.update(revealer, card.id, { metadata: { Customer: null, note: 'vip' } });
      expect(updated.metadata).toEqual({ note: 'vip' });
      expect((await vault.tokens.list(revealer, { metadata: { customer: 'cus_42' } })).data).toEqual([]);
      expect((await vault.tokens.list(revealer, { metadata: { note: 'VIP' } })).data.map((t) => t.id)).toEqual([card.id]);

      await vault.tokens.delete(revealer, card.id);
      await expect(vault.tokens.get(revealer, card.id)).rejects.toThrow(NotFoundError);
      await expect(vault.tokens.create(revealer, { id: card.id, type: 'token', data: 'x' })).rejects.toThrow(/already exists/);
      const log = await vault.logs.list(await vault.authenticate(vault.adminKey), { resource_id: card.id });
      expect(log.data.map((entry) => (entry as { operation: string }).operation)).toEqual(expect.arrayContaining(['token:create', 'token:update', 'token:delete']));
    });

    it('runs a reactor with detokenized arguments', async () => {
      const admin = await vault.authenticate(vault.adminKey);
      const user = await vault.caller({ permissions: ['token:create', 'token:read', 'token:use'], name: 'user' });
      const card = await vault.tokens.create(user, { type: 'card', data: CARD });
      const formula = await vault.formulas.create(admin, {
        name: 'last4',
        code: 'module.exports = async (req) => ({ raw: { last4: req.args.card.number.slice(-4), key: req.configuration.key } });',
        configuration: [{ name: 'key', type: 'string' }],
      });
      const reactor = await vault.reactors.create(admin, { name: 'last4', formula: { id: formula.id }, configuration: { key: 'k1' } });
      expect(await vault.reactors.react(user, reactor.id, { args: { card: `{{ ${card.id} }}` } })).toEqual({ raw: { last4: '4242', key: 'k1' } });
      await expect(vault.formulas.delete(admin, formula.id)).rejects.toThrow();
    });

    it('expires tokens and removes the cvc after an hour through the sweep', async () => {
      const revealer = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL });
      const card = await vault.tokens.create(revealer, { type: 'card', data: CARD });
      const brief = await vault.tokens.create(revealer, { type: 'token', data: 'brief', expires_at: '2030-01-01T00:30:00Z' });
      vault.clock.advance(HOUR);
      expect(await vault.sweep()).toEqual({ expired: 1, cvcRemoved: 1, idempotencyKeysRemoved: 0, reactorResultsRemoved: 0, sessionsRemoved: 0 });
      expect((await vault.store.getDeletedToken(vault.tenantId, brief.id))?.deletedBy).toBe('system:expiry');
      const { cvc: _cvc, ...withoutCvc } = CARD;
      expect((await vault.tokens.get(revealer, card.id)).data).toEqual(withoutCvc);
    });

    it('stores no plaintext: no table row holds the card number, account number, strings or the cvc', async () => {
      const revealer = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL });
      const secrets = { card: '4111111111111111', account: '98765432101234', string: 'correct-horse-battery-staple', searchable: 'jane.secret@example.com' };
      const cvc = '7319';
      await vault.tokens.create(revealer, { type: 'card', data: { number: secrets.card, expiration_month: 1, expiration_year: 2032, cvc } });
      await vault.tokens.create(revealer, { type: 'bank', data: { routing_number: '011000015', account_number: secrets.account } });
      await vault.tokens.create(revealer, { type: 'token', data: secrets.string, deduplicate_token: true, metadata: { kind: 'string' } });
      await vault.tokens.create(revealer, { type: 'token', data: { email: secrets.searchable }, search_indexes: ['{{ data.email }}'] });
      const { card, apiKey } = await makeIdempotentRevealingRequests(vault, revealer.key, vault.adminKey);
      Object.assign(secrets, { idempotentCard: card.number, idempotentApiKey: apiKey });
      const text = await dumpSchema();
      expect(text).toContain('scan-create'); // idempotency rows are dumped too
      expect(text).toContain('kind'); // the dump does read the rows (metadata is stored in the clear)
      for (const [name, secret] of Object.entries(secrets)) expect(text.includes(secret), `${name} found in plaintext`).toBe(false);
      // Four digits turn up by chance in ids and hex, so the cvc is looked for as stored JSON.
      for (const value of [cvc, card.cvc]) expect(text.includes(`"cvc":"${value}"`), 'cvc found in plaintext').toBe(false);
      expect(text.includes(vault.adminKey), 'API key found').toBe(false);
    });
  });
}
