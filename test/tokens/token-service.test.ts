import { beforeEach, describe, expect, it } from 'vitest';
import { AuthorizationError, ConflictError, NotFoundError, ValidationError } from '../../src/errors/errors.js';
import type { TestVault } from '../../src/testing/index.js';
import { ALL_TOKEN_PERMISSIONS, BANK, CARD, REVEAL_ALL, setup, snapshot } from '../support/tokens.js';
import type { TokenService } from '../../src/tokens/token-service.js';
import type { CreateTokenInput, UpdateTokenInput } from '../../src/tokens/token-input.js';
import { describeEachStore } from '../support/stores.js';

type Caller = Awaited<ReturnType<TestVault['caller']>>;

/** The token service as JavaScript callers see it: these tests send what its types would refuse, on purpose. */
const createUnchecked = (tokens: TokenService, caller: Caller, body: unknown) => tokens.create(caller, body as CreateTokenInput);
const updateUnchecked = (tokens: TokenService, caller: Caller, id: string, body: unknown) => tokens.update(caller, id, body as UpdateTokenInput);
describeEachStore('token service', (store) => {
  let vault: TestVault;
  let revealer: Caller;
  let masker: Caller;

  beforeEach(async () => {
    ({ vault, revealer, masker } = await setup(store));
  });

  /** Asserts the call fails with a ValidationError naming `field`, and that the store is unchanged. */
  async function rejects(call: () => Promise<unknown>, field: string): Promise<void> {
    const before = await snapshot(vault, revealer);
    const error = await call().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error, `expected a ValidationError on ${field}`).toBeInstanceOf(ValidationError);
    expect(Object.keys((error as ValidationError).errors)).toContain(field);
    expect(await snapshot(vault, revealer)).toEqual(before);
  }

  describe('create', () => {
    it('creates a card token with the type defaults and echoes mask, search_indexes, fingerprint_expression', async () => {
      const token = await vault.tokens.create(revealer, { type: 'card', data: CARD, metadata: { customer: 'c1' } });
      expect(token.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(token.tenant_id).toBe(vault.tenantId);
      expect(token.type).toBe('card');
      expect(token.data).toEqual(CARD);
      expect(token.containers).toEqual(['/pci/high/']);
      expect(token.metadata).toEqual({ customer: 'c1' });
      expect(token.fingerprint_expression).toBe('{{ data.number }}');
      expect(token.mask).toEqual(expect.objectContaining({ number: expect.stringContaining('reveal_last') }));
      expect(token.search_indexes).toEqual([]);
      expect(token.created_by).toBe(revealer.applicationId);
      expect(token.created_at).toBe('2030-01-01T00:00:00.000+00:00');
      expect(typeof token.fingerprint).toBe('string');
    });

    it('get and list responses do not echo mask, search_indexes or fingerprint_expression', async () => {
      const created = await vault.tokens.create(revealer, { type: 'card', data: CARD });
      const got = await vault.tokens.get(revealer, created.id);
      expect(Object.keys(got).sort()).toEqual(['containers', 'created_at', 'created_by', 'data', 'fingerprint', 'id', 'metadata', 'tenant_id', 'type']);
      const listed = await vault.tokens.list(revealer);
      expect(listed.data[0]).toEqual(got);
    });

    it('assigns time-ordered version 7 UUIDs: each later than the one before', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push((await vault.tokens.create(revealer, { type: 'token', data: `value ${i}` })).id);
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect([...ids].sort()).toEqual(ids);
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('uses a given id, rejects a duplicate id with a conflict, and never reuses a deleted id', async () => {
      await vault.tokens.create(revealer, { id: 'my-token', type: 'token', data: 'hello world' });
      await expect(vault.tokens.create(revealer, { id: 'my-token', type: 'token', data: 'other' })).rejects.toThrow(ConflictError);
      await vault.tokens.delete(revealer, 'my-token');
      await expect(vault.tokens.create(revealer, { id: 'my-token', type: 'token', data: 'other' })).rejects.toThrow(ConflictError);
    });

    it('renders an id expression over the data (through an alias filter only: the id guard)', async () => {
      const token = await vault.tokens.create(revealer, { id: 'card-{{ data.number | alias_preserve_format: 0, 4 }}', type: 'card', data: { number: '4242424242424242' } });
      expect(token.id).toMatch(/^card-\d{12}4242$/);
      await rejects(() => vault.tokens.create(revealer, { id: 'card-{{ data.number | last4 }}', type: 'card', data: { number: '4242424242424242' } }), 'id');
    });

    it('rejects an id that contains the data or a 4+ character leaf of it', async () => {
      await rejects(() => vault.tokens.create(revealer, { id: 'x4242424242424242', type: 'card', data: { number: '4242424242424242' } }), 'id');
      await rejects(() => vault.tokens.create(revealer, { id: 'id-secret', type: 'token', data: { nested: ['secret'] } }), 'id');
      await rejects(() => vault.tokens.create(revealer, { id: '{{ data }}', type: 'token', data: 'plaintext' }), 'id');
      // Short leaves (under 4 characters) may appear by chance and are allowed.
      const ok = await vault.tokens.create(revealer, { id: 'abc-1', type: 'token', data: { a: 'abc' } });
      expect(ok.id).toBe('abc-1');
    });

    it('rejects malformed ids', async () => {
      await rejects(() => vault.tokens.create(revealer, { id: 'has space', type: 'token', data: 'x' }), 'id');
      await rejects(() => vault.tokens.create(revealer, { id: 'a/b', type: 'token', data: 'x' }), 'id');
      await rejects(() => vault.tokens.create(revealer, { id: 'x'.repeat(251), type: 'token', data: 'x' }), 'id');
      await rejects(() => createUnchecked(vault.tokens, revealer, { id: 42, type: 'token', data: 'x' }), 'id');
    });

    it('validates card data by the type table of docs/tokens.md, naming each field, and stores nothing', async () => {
      await rejects(() => vault.tokens.create(revealer, { type: 'card', data: { number: '4242 4242 4242 4242' } }), 'data.number');
      await rejects(() => vault.tokens.create(revealer, { type: 'card', data: { number: '4242424242424241' } }), 'data.number');
      await rejects(() => vault.tokens.create(revealer, { type: 'card', data: { number: '4242424242424242', expiration_month: 13 } }), 'data.expiration_month');
      await rejects(() => vault.tokens.create(revealer, { type: 'card', data: { number: '4242424242424242', expiration_year: 31 } }), 'data.expiration_year');
      await rejects(() => vault.tokens.create(revealer, { type: 'card', data: { number: '4242424242424242', cvc: '12' } }), 'data.cvc');
      await rejects(() => vault.tokens.create(revealer, { type: 'card', data: { number: '4242424242424242', cvc: '12345' } }), 'data.cvc');
      await rejects(() => vault.tokens.create(revealer, { type: 'card', data: { expiration_month: 1 } }), 'data.number');
    });

    it('validates bank data by the type table of docs/tokens.md', async () => {
      await rejects(() => vault.tokens.create(revealer, { type: 'bank', data: { ...BANK, account_number: '1'.repeat(18) } }), 'data.account_number');
      await rejects(() => vault.tokens.create(revealer, { type: 'bank', data: { ...BANK, routing_number: '021000022' } }), 'data.routing_number');
      await rejects(() => vault.tokens.create(revealer, { type: 'bank', data: { account_number: '123456' } }), 'data.routing_number');
      const ok = await vault.tokens.create(revealer, { type: 'bank', data: { ...BANK, account_number: '1'.repeat(17) } });
      expect(ok.containers).toEqual(['/bank/high/']);
    });

    it('rejects wrong types for every field of the body', async () => {
      const base = { type: 'token', data: 'x' };
      await rejects(() => createUnchecked(vault.tokens, revealer, { ...base, type: 5 }), 'type');
      await rejects(() => vault.tokens.create(revealer, { ...base, type: 'no_such_type' }), 'type');
      await rejects(() => createUnchecked(vault.tokens, revealer, { type: 'token' }), 'data');
      await rejects(() => createUnchecked(vault.tokens, revealer, { ...base, containers: '/a/' }), 'containers');
      await rejects(() => vault.tokens.create(revealer, { ...base, containers: ['no-slashes'] }), 'containers[0]');
      await rejects(() => vault.tokens.create(revealer, { ...base, containers: ['/UPPER ok/'] }), 'containers[0]');
      await rejects(() => createUnchecked(vault.tokens, revealer, { ...base, metadata: { a: 1 } }), 'metadata.a');
      await rejects(() => createUnchecked(vault.tokens, revealer, { ...base, metadata: 'x' }), 'metadata');
      await rejects(() => createUnchecked(vault.tokens, revealer, { ...base, search_indexes: 'x' }), 'search_indexes');
      await rejects(() => createUnchecked(vault.tokens, revealer, { ...base, fingerprint_expression: 7 }), 'fingerprint_expression');
      await rejects(() => createUnchecked(vault.tokens, revealer, { ...base, deduplicate_token: 'yes' }), 'deduplicate_token');
      await rejects(() => createUnchecked(vault.tokens, revealer, { ...base, expires_at: 12 }), 'expires_at');
      await rejects(() => createUnchecked(vault.tokens, revealer, { ...base, unknown_field: 1 }), 'unknown_field');
      await expect(createUnchecked(vault.tokens, revealer, 'not an object')).rejects.toThrow(ValidationError);
      await expect(createUnchecked(vault.tokens, revealer, null)).rejects.toThrow(ValidationError);
    });

    it('expressions that fail are validation errors naming the field', async () => {
      await rejects(() => vault.tokens.create(revealer, { type: 'token', data: 'x', mask: '{{ data | no_such_filter }}' }), 'mask');
      await rejects(() => vault.tokens.create(revealer, { type: 'token', data: 'x', fingerprint_expression: '{{ data | to_number }}' }), 'fingerprint_expression');
      await rejects(() => vault.tokens.create(revealer, { type: 'token', data: 'x', search_indexes: ['{{ data | nope }}'] }), 'search_indexes[0]');
      await rejects(() => vault.tokens.create(revealer, { type: 'token', data: 'x', id: '{{ data | nope }}' }), 'id');
    });

    it('containers are normalized to lower case', async () => {
      const token = await vault.tokens.create(revealer, { type: 'token', data: 'x', containers: ['/Team/A_1/'] });
      expect(token.containers).toEqual(['/team/a_1/']);
    });
  });

  describe('transforms', () => {
    it('masks by default with the type mask; reveal with a rule; redact shows no data', async () => {
      const created = await vault.tokens.create(revealer, { type: 'card', data: CARD });
      const masked = await vault.tokens.get(masker, created.id);
      expect(masked.data).toEqual({ number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 });
      const redactor = await vault.caller({ permissions: ['token:read'], rules: [{ priority: 0, container: '/', transform: 'redact', permissions: ['token:read'] }] });
      const redacted = await vault.tokens.get(redactor, created.id);
      expect(redacted).not.toHaveProperty('data');
      expect(redacted.id).toBe(created.id);
    });

    it('a token type without a mask returns no data when masked', async () => {
      const created = await vault.tokens.create(revealer, { type: 'token', data: { ssn: '123-45-6789' } });
      expect(await vault.tokens.get(masker, created.id)).not.toHaveProperty('data');
    });

    it('applies a custom mask and keeps JSON types of single-variable leaves', async () => {
      const created = await vault.tokens.create(revealer, {
        type: 'token',
        data: { name: 'Jane Doe', age: 41 },
        mask: { name: '{{ data.name | reveal_last: 3 }}', age: '{{ data.age }}' },
      });
      expect((await vault.tokens.get(masker, created.id)).data).toEqual({ name: 'XXXXXDoe', age: 41 });
    });

    it('create responds with the create transform (masked without a reveal rule)', async () => {
      const created = await vault.tokens.create(masker, { type: 'card_number', data: '4242424242424242' });
      expect(created.data).toBe('XXXXXXXXXXXX4242');
    });

    it('a token in a container the rules do not grant is not found, as a missing id is; creating there is forbidden', async () => {
      const narrow = await vault.caller({
        permissions: ['token:read', 'token:create'],
        rules: [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read', 'token:create'] }],
      });
      const bank = await vault.tokens.create(revealer, { type: 'bank', data: BANK });
      await expect(vault.tokens.get(narrow, bank.id)).rejects.toThrow(new NotFoundError('Token', bank.id));
      await expect(vault.tokens.create(narrow, { type: 'bank', data: BANK })).rejects.toThrow(AuthorizationError);
      const card = await vault.tokens.create(narrow, { type: 'card', data: CARD });
      expect((await vault.tokens.get(narrow, card.id)).data).toEqual(CARD);
    });
  });

  describe('permissions', () => {
    it('each operation requires its permission', async () => {
      const created = await vault.tokens.create(revealer, { type: 'token', data: 'x' });
      const none = await vault.caller({ permissions: ['token:create'] });
      await expect(vault.tokens.get(none, created.id)).rejects.toThrow(/token:read/);
      await expect(vault.tokens.list(none)).rejects.toThrow(/token:read/);
      await expect(vault.tokens.update(none, created.id, { metadata: { a: 'b' } })).rejects.toThrow(/token:update/);
      await expect(vault.tokens.delete(none, created.id)).rejects.toThrow(/token:delete/);
      await expect(vault.tokens.search(none, { query: 'type:token' })).rejects.toThrow(/token:search/);
      await expect(vault.tokens.use(none, [created.id])).rejects.toThrow(/token:use/);
      const reader = await vault.caller({ permissions: ['token:read'] });
      await expect(vault.tokens.create(reader, { type: 'token', data: 'x' })).rejects.toThrow(/token:create/);
    });
  });

  describe('tenant isolation', () => {
    it("another tenant's token is not found, never forbidden", async () => {
      const created = await vault.tokens.create(revealer, { id: 'shared-id', type: 'token', data: 'mine' });
      const { application } = await vault.createTenant({ name: 'other' });
      const otherAdmin = await vault.authenticate(application.key);
      const otherApp = await vault.applications.create(otherAdmin, { name: 'o', type: 'private', permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL });
      const other = await vault.authenticate(otherApp.key!);
      await expect(vault.tokens.get(other, created.id)).rejects.toThrow(NotFoundError);
      await expect(vault.tokens.update(other, created.id, { metadata: { a: 'b' } })).rejects.toThrow(NotFoundError);
      await expect(vault.tokens.delete(other, created.id)).rejects.toThrow(NotFoundError);
      expect((await vault.tokens.list(other)).data).toEqual([]);
      // The same id is free in the other tenant.
      const theirs = await vault.tokens.create(other, { id: 'shared-id', type: 'token', data: 'theirs' });
      expect(theirs.data).toBe('theirs');
      expect((await vault.tokens.get(revealer, 'shared-id')).data).toBe('mine');
    });
  });

  describe('list and pagination', () => {
    beforeEach(async () => {
      for (let i = 0; i < 25; i++) {
        await vault.tokens.create(revealer, {
          id: `t${String(i).padStart(2, '0')}`,
          type: i % 2 ? 'token' : 'card_number',
          data: i % 2 ? `v${i}` : '4242424242424242',
          metadata: { group: i < 10 ? 'Low' : 'high', idx: String(i) },
        });
      }
    });

    it('cursor mode pages through everything in creation order (default size 20)', async () => {
      const first = await vault.tokens.list(revealer);
      expect(first.data).toHaveLength(20);
      expect(first.pagination).toEqual({ page_size: 20, next: expect.any(String), after: (first.pagination as { next: string }).next });
      const second = await vault.tokens.list(revealer, { start: (first.pagination as { next: string }).next });
      expect(second.data.map((t) => t.id)).toEqual(['t20', 't21', 't22', 't23', 't24']);
      expect((second.pagination as { next: string | null }).next).toBeNull();
    });

    it('offset mode when page is given', async () => {
      const page = await vault.tokens.list(revealer, { page: 3, size: 10 });
      expect(page.pagination).toEqual({ total_items: 25, page_number: 3, page_size: 10, total_pages: 3 });
      expect(page.data.map((t) => t.id)).toEqual(['t20', 't21', 't22', 't23', 't24']);
    });

    it('rejects bad paging parameters', async () => {
      await expect(vault.tokens.list(revealer, { size: 101 })).rejects.toThrow(ValidationError);
      await expect(vault.tokens.list(revealer, { size: 0 })).rejects.toThrow(ValidationError);
      await expect(vault.tokens.list(revealer, { page: 'x' })).rejects.toThrow(ValidationError);
      await expect(vault.tokens.list(revealer, { start: 'garbage!' })).rejects.toThrow(ValidationError);
    });

    it('filters by repeatable id and type, and metadata case-insensitively, ANDed', async () => {
      expect((await vault.tokens.list(revealer, { id: ['t01', 't02', 'nope'] })).data.map((t) => t.id)).toEqual(['t01', 't02']);
      expect((await vault.tokens.list(revealer, { type: 'token', size: 100 })).data).toHaveLength(12);
      expect((await vault.tokens.list(revealer, { type: ['token', 'card_number'], size: 100 })).data).toHaveLength(25);
      expect((await vault.tokens.list(revealer, { metadata: { group: 'low' }, size: 100 })).data).toHaveLength(10);
      expect((await vault.tokens.list(revealer, { metadata: { GROUP: 'LOW', idx: '3' } })).data.map((t) => t.id)).toEqual(['t03']);
      expect((await vault.tokens.list(revealer, { metadata: { group: 'lo' } })).data).toEqual([]);
    });

    it('list data follows the transform of each token', async () => {
      const page = await vault.tokens.list(masker, { id: 't00' });
      expect(page.data[0]!.data).toBe('XXXXXXXXXXXX4242');
    });
  });

  describe('update', () => {
    it('merge-patches data, mask and metadata; replaces the rest; records modifier', async () => {
      const created = await vault.tokens.create(revealer, { type: 'token', data: { a: 1, b: { c: 2 } }, metadata: { x: '1', y: '2' } });
      vault.clock.advance(1000);
      const updated = await vault.tokens.update(revealer, created.id, {
        data: { b: { c: null, d: 3 } },
        metadata: { y: null, z: '3' },
        containers: ['/other/'],
        search_indexes: ['{{ data.a }}'],
      });
      expect(updated.data).toEqual({ a: 1, b: { d: 3 } });
      expect(updated.metadata).toEqual({ x: '1', z: '3' });
      expect(updated.containers).toEqual(['/other/']);
      expect(updated.search_indexes).toEqual(['{{ data.a }}']);
      expect(updated.modified_by).toBe(revealer.applicationId);
      expect(updated.modified_at).toBe('2030-01-01T00:00:01.000+00:00');
      expect((await vault.tokens.get(revealer, created.id)).data).toEqual({ a: 1, b: { d: 3 } });
    });

    it('validates the patched data by type and changes nothing on failure', async () => {
      const created = await vault.tokens.create(revealer, { type: 'card', data: CARD });
      await rejects(() => vault.tokens.update(revealer, created.id, { data: { expiration_month: 13 } }), 'data.expiration_month');
      await rejects(() => updateUnchecked(vault.tokens, revealer, created.id, { metadata: { a: 5 } }), 'metadata.a');
      await rejects(() => vault.tokens.update(revealer, created.id, { containers: ['bad'] }), 'containers[0]');
      await rejects(() => vault.tokens.update(revealer, created.id, { expires_at: '1/1/2000' }), 'expires_at');
    });

    it('unknown id is not found', async () => {
      await expect(vault.tokens.update(revealer, 'nope', { metadata: { a: 'b' } })).rejects.toThrow(NotFoundError);
    });

    it('an update that would duplicate a token the caller may reveal is not applied; one it may not reveal is no duplicate', async () => {
      const a = await vault.tokens.create(revealer, { type: 'card_number', data: '4242424242424242' });
      const b = await vault.tokens.create(revealer, { type: 'card_number', data: '4000056655665556' });
      const updated = await vault.tokens.update(revealer, b.id, { data: '4242424242424242', deduplicate_token: true });
      expect(updated.id).toBe(a.id);
      expect(updated._extras).toEqual({ deduplicated: true });
      expect((await vault.tokens.get(revealer, b.id)).data).toBe('4000056655665556');
      const writer = await vault.caller({ permissions: ['token:update'], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:update'] }] });
      // The writer may not read `a`: the update is applied as if `a` did not exist, and names only `b`.
      const written = await vault.tokens.update(writer, b.id, { data: '4242424242424242', deduplicate_token: true });
      expect(written).toEqual({ id: b.id, type: 'card_number', tenant_id: vault.tenantId });
      expect((await vault.tokens.get(revealer, b.id)).data).toBe('4242424242424242');
    });
  });

  describe('deduplication', () => {
    it('returns the existing token of the same type and fingerprint, with _extras.deduplicated', async () => {
      const first = await vault.tokens.create(revealer, { type: 'card', data: CARD, deduplicate_token: true });
      const again = await vault.tokens.create(revealer, { type: 'card', data: { ...CARD, cvc: '999' }, deduplicate_token: true });
      expect(again.id).toBe(first.id);
      expect(again._extras).toEqual({ deduplicated: true });
      expect((await vault.tokens.list(revealer)).data).toHaveLength(1);
      // Without the flag, a second token is made.
      const separate = await vault.tokens.create(revealer, { type: 'card', data: CARD });
      expect(separate.id).not.toBe(first.id);
      // Another type with the same fingerprint value is not a duplicate.
      const other = await vault.tokens.create(revealer, { type: 'card_number', data: CARD.number, deduplicate_token: true });
      expect(other._extras).toBeUndefined();
    });

    it('never matches a token the caller may not reveal: a new token is made, and nothing names the existing one', async () => {
      const first = await vault.tokens.create(revealer, { type: 'card', data: CARD, metadata: { m: 'x' }, deduplicate_token: true });
      const creator = await vault.caller({ permissions: ['token:create'] });
      const masked = await vault.caller({ permissions: ['token:create', 'token:read'] });
      for (const caller of [creator, masked]) {
        const again = await vault.tokens.create(caller, { type: 'card', data: CARD, deduplicate_token: true });
        expect(again.id).not.toBe(first.id);
        expect(again._extras).toBeUndefined();
        expect(JSON.stringify(again)).not.toContain(first.id);
      }
    });

    it('fingerprint expressions can use metadata', async () => {
      const a = await vault.tokens.create(revealer, {
        type: 'token',
        data: 'x',
        metadata: { k: '1' },
        fingerprint_expression: '{{ data }}-{{ metadata.k }}',
        deduplicate_token: true,
      });
      const b = await vault.tokens.create(revealer, {
        type: 'token',
        data: 'x',
        metadata: { k: '2' },
        fingerprint_expression: '{{ data }}-{{ metadata.k }}',
        deduplicate_token: true,
      });
      expect(a.fingerprint).not.toBe(b.fingerprint);
    });
  });

  describe('delete', () => {
    it('removes the token permanently and leaves an audit reference', async () => {
      const created = await vault.tokens.create(revealer, { type: 'token', data: 'gone' });
      await vault.tokens.delete(revealer, created.id);
      await expect(vault.tokens.get(revealer, created.id)).rejects.toThrow(NotFoundError);
      await expect(vault.tokens.delete(revealer, created.id)).rejects.toThrow(NotFoundError);
      const reference = await vault.store.getDeletedToken(vault.tenantId, created.id);
      expect(reference).toEqual({ tenantId: vault.tenantId, id: created.id, type: 'token', deletedAt: vault.clock.now(), deletedBy: revealer.applicationId });
    });
  });

  describe('search', () => {
    it('matches blind indexes and the other terms, ANDed', async () => {
      const a = await vault.tokens.create(revealer, {
        type: 'token',
        data: { email: 'jane@example.com' },
        search_indexes: ['{{ data.email }}'],
        metadata: { plan: 'Gold' },
        containers: ['/crm/'],
      });
      await vault.tokens.create(revealer, { type: 'token', data: { email: 'joe@example.com' }, search_indexes: ['{{ data.email }}'], metadata: { plan: 'gold' } });
      const ids = async (query: string) => (await vault.tokens.search(revealer, { query })).data.map((t) => t.id);
      expect(await ids('data:jane@example.com')).toEqual([a.id]);
      expect(await ids('data:"jane@example.com" AND metadata.plan:GOLD')).toEqual([a.id]);
      expect((await ids('metadata.plan:gold')).length).toBe(2);
      expect(await ids(`id:${a.id}`)).toEqual([a.id]);
      expect(await ids('container:/crm/')).toEqual([a.id]);
      expect(await ids(`fingerprint:${a.fingerprint}`)).toEqual([a.id]);
      expect(await ids('type:token AND type:card')).toEqual([]);
      expect(await ids('data:nobody@example.com')).toEqual([]);
    });

    it('rejects malformed queries', async () => {
      await expect(vault.tokens.search(revealer, { query: 'data:x OR type:y' })).rejects.toThrow(ValidationError);
      await expect(vault.tokens.search(revealer, { query: '' })).rejects.toThrow(ValidationError);
      await expect(vault.tokens.search(revealer, { query: 'secret:1' })).rejects.toThrow(ValidationError);
    });
  });

  describe('tokenize', () => {
    it('creates every {type, data} object and mirrors the shape', async () => {
      const result = (await vault.tokens.tokenize(revealer, {
        card: { type: 'card', data: CARD },
        list: [{ type: 'token', data: 'a' }, 'plain'],
        note: 'kept',
      })) as { card: { id: string; type: string }; list: [{ id: string }, string]; note: string };
      expect(result.card.type).toBe('card');
      expect(result.list[1]).toBe('plain');
      expect(result.note).toBe('kept');
      expect((await vault.tokens.get(revealer, result.list[0].id)).data).toBe('a');
    });

    it('validates every item first, so a bad one stores nothing', async () => {
      await rejects(() => vault.tokens.tokenize(revealer, { good: { type: 'token', data: 'a' }, bad: { type: 'card', data: { number: '1' } } }), 'bad.data.number');
    });
  });
});
