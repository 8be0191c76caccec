import { expect, it } from 'vitest';
import { AuthorizationError, ValidationError } from '../../src/errors/errors.js';
import type { AccessRule, Permission, Transform } from '../../src/permissions/permissions.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { ALL_TOKEN_PERMISSIONS, CARD, REVEAL_ALL, snapshot } from '../support/tokens.js';

/*
 * Disclosure (ARCHITECTURE.md "Disclosure", docs/security.md): no caller learns more about a token's data than
 * its token:read transform on the token reveals, through any operation.
 */

type Caller = Awaited<ReturnType<TestVault['caller']>>;

const rule = (container: string, transform: Transform, permissions: Permission[], priority = 0): AccessRule => ({ priority, container, transform, permissions });

async function setup(vault: TestVault) {
  const revealer = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL, name: 'revealer' });
  /** The browser's key: token:create and token:update, implicit rules (mask on /). */
  const publicApp = await vault.caller({ type: 'public', permissions: ['token:create', 'token:update'], name: 'public' });
  return { revealer, publicApp };
}

async function failure(call: () => Promise<unknown>): Promise<unknown> {
  return call().then(
    () => null,
    (e: unknown) => e,
  );
}

/** Expects the call to fail with `type` and the tenant's tokens to be exactly as before. */
async function refused(vault: TestVault, revealer: Caller, call: () => Promise<unknown>, type: typeof AuthorizationError | typeof ValidationError, text?: RegExp) {
  const before = await snapshot(vault, revealer);
  const error = await failure(call);
  expect(error).toBeInstanceOf(type);
  if (text) expect((error as Error).message + JSON.stringify((error as ValidationError).errors ?? {})).toMatch(text);
  expect(await snapshot(vault, revealer)).toEqual(before);
}

describeEachStore('disclosure: update cannot change what a token discloses without reveal', (store) => {
  it('a public application cannot patch a mask that shows the number and cvc (403 naming mask); the mask stays as it was', async () => {
    const vault = await store.vault();
    const { revealer, publicApp } = await setup(vault);
    const masker = await vault.caller({ permissions: ['token:read'] });
    const card = await vault.tokens.create(revealer, { type: 'card', data: CARD });
    await refused(
      vault,
      revealer,
      () => vault.tokens.update(publicApp, card.id, { mask: { n: '{{ data.number }}', cvc: '{{ data.cvc }}' } }),
      AuthorizationError,
      /'mask'.*reveal/,
    );
    expect((await vault.tokens.get(masker, card.id)).data).toEqual({ number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 });
  });

  it('fingerprint_expression, search_indexes and containers need reveal too (the slice oracle, the blind index, the container move)', async () => {
    const vault = await store.vault();
    const { revealer } = await setup(vault);
    const redactUpdater = await vault.caller({
      permissions: ['token:create', 'token:update', 'token:read'],
      rules: [rule('/', 'redact', ['token:create', 'token:update', 'token:read'])],
    });
    const card = await vault.tokens.create(revealer, { type: 'card', data: CARD, containers: ['/a/'] });
    await refused(
      vault,
      revealer,
      () => vault.tokens.update(redactUpdater, card.id, { fingerprint_expression: '{{ data.number | slice: 0, 2 }}' }),
      AuthorizationError,
      /fingerprint_expression/,
    );
    await refused(vault, revealer, () => vault.tokens.update(redactUpdater, card.id, { search_indexes: ['{{ data.cvc }}'] }), AuthorizationError, /search_indexes/);
    // Update on both containers, reveal-read only on /b/: moving the token there would reveal it.
    const mover = await vault.caller({
      permissions: ['token:update', 'token:read'],
      rules: [rule('/b/', 'reveal', ['token:update', 'token:read']), rule('/a/', 'mask', ['token:update', 'token:read'], 1)],
    });
    await refused(vault, revealer, () => vault.tokens.update(mover, card.id, { containers: ['/b/'] }), AuthorizationError, /containers/);
    await refused(vault, revealer, () => vault.tokens.update(mover, card.id, { containers: ['/a/', '/b/'] }), AuthorizationError, /containers/);
  });

  it('writing the current values again needs no reveal from a reader, other attributes none at all; a revealing reader may change them', async () => {
    const vault = await store.vault();
    const { revealer, publicApp } = await setup(vault);
    const masker = await vault.caller({ permissions: ['token:read', 'token:update'] });
    const card = await vault.tokens.create(revealer, { type: 'card', data: CARD, search_indexes: ['{{ data.number | last4 }}'] });
    const current = { containers: ['/PCI/high/'], fingerprint_expression: '{{ data.number }}', search_indexes: ['{{ data.number | last4 }}'] };
    // A masked reader sees these settings anyway: their current values are no change.
    await expect(vault.tokens.update(masker, card.id, { ...current, metadata: { k: 'v' } })).resolves.toMatchObject({ id: card.id });
    // Without token:read, naming them at all is refused (a refusal of all but the current value would confirm guesses).
    await refused(vault, revealer, () => vault.tokens.update(publicApp, card.id, current), AuthorizationError, /reveal/);
    const same = await vault.tokens.update(publicApp, card.id, { metadata: { k: 'w' }, data: { expiration_month: 11 } });
    // Without token:read the answer is the token's identity only; the write happened.
    expect(same).toEqual({ id: card.id, type: 'card', tenant_id: vault.tenantId });
    expect((await vault.tokens.get(revealer, card.id)).metadata).toEqual({ k: 'w' });
    const changed = await vault.tokens.update(revealer, card.id, { mask: { n: '{{ data.number }}' }, containers: ['/x/'], search_indexes: [] });
    expect(changed.mask).toMatchObject({ n: '{{ data.number }}' });
    expect(changed.containers).toEqual(['/x/']);
  });

  it('creating a token with its own mask and fingerprint expression stays allowed (the creator wrote the data)', async () => {
    const vault = await store.vault();
    const { publicApp } = await setup(vault);
    const token = await vault.tokens.create(publicApp, { type: 'token', data: { a: 'secret' }, mask: '{{ data.a }}', fingerprint_expression: '{{ data.a }}' });
    expect(token.mask).toBe('{{ data.a }}');
  });
});

describeEachStore('disclosure: responses show at most the token:read transform', (store) => {
  it('create and update responses of a public application carry no data and no fingerprint', async () => {
    const vault = await store.vault();
    const { revealer, publicApp } = await setup(vault);
    const created = await vault.tokens.create(publicApp, { type: 'card', data: CARD });
    expect(created).not.toHaveProperty('data');
    expect(created).not.toHaveProperty('fingerprint');
    expect(created.containers).toEqual(['/pci/high/']);
    const updated = await vault.tokens.update(publicApp, created.id, { data: { cvc: '999' } });
    expect(updated).not.toHaveProperty('data');
    expect(updated).not.toHaveProperty('fingerprint');
    expect((await vault.tokens.get(revealer, created.id)).data).toEqual({ ...CARD, cvc: '999' });
  });

  it('the response transform is the stricter of the operation and token:read; fingerprint only with reveal', async () => {
    const vault = await store.vault();
    const { revealer } = await setup(vault);
    const mixed = await vault.caller({
      permissions: ['token:create', 'token:update', 'token:read'],
      rules: [rule('/', 'reveal', ['token:create', 'token:update']), rule('/', 'mask', ['token:read'], 1)],
    });
    const created = await vault.tokens.create(mixed, { type: 'card', data: CARD });
    expect(created.data).toEqual({ number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 });
    expect(created).not.toHaveProperty('fingerprint');
    const updated = await vault.tokens.update(mixed, created.id, { metadata: { a: 'b' } });
    expect(updated.data).toEqual({ number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 });
    expect(updated).not.toHaveProperty('fingerprint');
    // Reveal-read but mask-create: the create transform still limits.
    const readsAll = await vault.caller({ permissions: ['token:create', 'token:read'], rules: [rule('/', 'mask', ['token:create']), rule('/', 'reveal', ['token:read'], 1)] });
    const second = await vault.tokens.create(readsAll, { type: 'card', data: CARD });
    expect(second.data).toEqual({ number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 });
    expect(second.fingerprint).toMatch(/\S/);
    expect((await vault.tokens.create(revealer, { type: 'card', data: CARD })).fingerprint).toBe(second.fingerprint);
  });

  it('get, list and search show the fingerprint only to callers whose token:read transform is reveal', async () => {
    const vault = await store.vault();
    const { revealer } = await setup(vault);
    const masker = await vault.caller({ permissions: ['token:read', 'token:search'] });
    const searchRevealer = await vault.caller({
      permissions: ['token:read', 'token:search'],
      rules: [rule('/', 'reveal', ['token:search']), rule('/', 'mask', ['token:read'], 1)],
    });
    const card = await vault.tokens.create(revealer, { type: 'card', data: CARD, metadata: { m: '1' } });
    expect((await vault.tokens.get(revealer, card.id)).fingerprint).toBe(card.fingerprint);
    expect(await vault.tokens.get(masker, card.id)).not.toHaveProperty('fingerprint');
    expect((await vault.tokens.list(masker)).data[0]).not.toHaveProperty('fingerprint');
    expect((await vault.tokens.search(masker, { query: 'metadata.m:1' })).data[0]).not.toHaveProperty('fingerprint');
    const searched = (await vault.tokens.search(searchRevealer, { query: 'metadata.m:1' })).data[0]!;
    expect(searched.data).toEqual(CARD);
    expect(searched).not.toHaveProperty('fingerprint');
    expect((await vault.tokens.list(revealer)).data[0]!.fingerprint).toBe(card.fingerprint);
  });
});

describeEachStore('disclosure: lists and searches count only what the caller may see', (store) => {
  async function tokensIn(vault: TestVault, revealer: Caller) {
    const a1 = await vault.tokens.create(revealer, { type: 'token', data: 'a1', containers: ['/a/'], metadata: { k: 'v' }, search_indexes: ['{{ data }}'] });
    const b1 = await vault.tokens.create(revealer, { type: 'token', data: 'b1', containers: ['/b/'], metadata: { k: 'v' }, search_indexes: ['{{ data }}'] });
    const a2 = await vault.tokens.create(revealer, { type: 'token', data: 'a2', containers: ['/a/x/'], metadata: { k: 'v' }, search_indexes: ['{{ data }}'] });
    const both = await vault.tokens.create(revealer, { type: 'token', data: 'ab', containers: ['/a/', '/b/'], metadata: { k: 'v' }, search_indexes: ['{{ data }}'] });
    return { a1, b1, a2, both };
  }

  it('list: total_items counts readable tokens only and pages are full', async () => {
    const vault = await store.vault();
    const { revealer } = await setup(vault);
    const { a1, a2 } = await tokensIn(vault, revealer);
    const reader = await vault.caller({ permissions: ['token:read'], rules: [rule('/a/', 'mask', ['token:read'])] });
    const first = await vault.tokens.list(reader, { page: 1, size: 2 });
    expect(first.pagination).toMatchObject({ total_items: 2, total_pages: 1 });
    expect(first.data.map((t) => t.id)).toEqual([a1.id, a2.id]);
    const filtered = await vault.tokens.list(reader, { page: 1, size: 10, metadata: { k: 'v' } });
    expect(filtered.pagination).toMatchObject({ total_items: 2 });
    const cursor = await vault.tokens.list(reader, { size: 1 });
    expect(cursor.data.map((t) => t.id)).toEqual([a1.id]);
  });

  it('search: container: and metadata. terms never match tokens the caller may not search, counts included', async () => {
    const vault = await store.vault();
    const { revealer } = await setup(vault);
    const { a1, a2, both } = await tokensIn(vault, revealer);
    const searcher = await vault.caller({ permissions: ['token:search'], rules: [rule('/a/', 'reveal', ['token:search'])] });
    const byContainer = await vault.tokens.search(searcher, { query: 'container:/b/', page: 1, size: 10 });
    expect(byContainer.pagination).toMatchObject({ total_items: 0 });
    expect(byContainer.data).toEqual([]);
    const byMetadata = await vault.tokens.search(searcher, { query: 'metadata.k:v', page: 1, size: 10 });
    expect(byMetadata.pagination).toMatchObject({ total_items: 2 });
    expect(byMetadata.data.map((t) => t.id)).toEqual([a1.id, a2.id]);
    // container terms are ANDed: a token in both containers matches both.
    expect((await vault.tokens.search(revealer, { query: 'container:/a/ AND container:/b/' })).data.map((t) => t.id)).toEqual([both.id]);
  });

  it('search: data: and fingerprint: terms match only tokens the caller may search with reveal (no equality oracle for a masked searcher)', async () => {
    const vault = await store.vault();
    const { revealer } = await setup(vault);
    const { a1, a2 } = await tokensIn(vault, revealer);
    const secret = await vault.tokens.create(revealer, { type: 'card', data: CARD, containers: ['/a/'] });
    // Reveal on /a/ except /a/x/, where an earlier rule masks.
    const searcher = await vault.caller({
      permissions: ['token:search'],
      rules: [rule('/a/x/', 'mask', ['token:search']), rule('/a/', 'reveal', ['token:search'], 1), rule('/', 'mask', ['token:search'], 2)],
    });
    const masked = await vault.caller({ permissions: ['token:search'] });
    expect((await vault.tokens.search(searcher, { query: 'data:a1' })).data.map((t) => t.id)).toEqual([a1.id]);
    const hidden = await vault.tokens.search(searcher, { query: 'data:a2', page: 1, size: 10 });
    expect(hidden.pagination).toMatchObject({ total_items: 0 });
    expect((await vault.tokens.search(masked, { query: 'data:a1', page: 1, size: 10 })).pagination).toMatchObject({ total_items: 0 });
    expect((await vault.tokens.search(masked, { query: `fingerprint:${secret.fingerprint}`, page: 1, size: 10 })).pagination).toMatchObject({ total_items: 0 });
    expect((await vault.tokens.search(searcher, { query: `fingerprint:${secret.fingerprint}` })).data.map((t) => t.id)).toEqual([secret.id]);
    // Without such terms the masked searcher still finds the tokens (masked).
    expect((await vault.tokens.search(masked, { query: 'metadata.k:v' })).data.map((t) => t.id)).toContain(a2.id);
  });
});

describeEachStore('disclosure: expiry, duplicates', (store) => {
  it('setting or advancing expires_at needs token:delete; extending or removing it does not', async () => {
    const vault = await store.vault();
    const { revealer, publicApp } = await setup(vault);
    const deleter = await vault.caller({ type: 'private', permissions: ['token:update', 'token:delete'] });
    const token = await vault.tokens.create(revealer, { type: 'token', data: 'x' });
    const soon = new Date(vault.clock.now() + 2_000).toISOString();
    await refused(vault, revealer, () => vault.tokens.update(publicApp, token.id, { expires_at: soon }), AuthorizationError, /token:delete/);
    const later = new Date(vault.clock.now() + 3_600_000).toISOString();
    const evenLater = new Date(vault.clock.now() + 7_200_000).toISOString();
    await vault.tokens.update(deleter, token.id, { expires_at: later });
    await vault.tokens.update(publicApp, token.id, { expires_at: evenLater });
    expect(Date.parse((await vault.tokens.get(revealer, token.id)).expires_at!)).toBe(Date.parse(evenLater));
    await refused(vault, revealer, () => vault.tokens.update(publicApp, token.id, { expires_at: soon }), AuthorizationError, /token:delete/);
    await vault.tokens.update(publicApp, token.id, { expires_at: null });
    expect(await vault.tokens.get(revealer, token.id)).not.toHaveProperty('expires_at');
    vault.clock.advance(3_000);
    expect((await vault.tokens.get(revealer, token.id)).id).toBe(token.id);
  });

  it('a duplicate is found only among tokens the caller may reveal: others get a new token and learn nothing', async () => {
    const vault = await store.vault();
    const { revealer, publicApp } = await setup(vault);
    const masker = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const first = await vault.tokens.create(revealer, { type: 'card', data: CARD, metadata: { m: 'x' }, deduplicate_token: true });
    for (const caller of [publicApp, masker]) {
      const made = await vault.tokens.create(caller, { type: 'card', data: CARD, deduplicate_token: true });
      expect(made.id).not.toBe(first.id);
      expect(made._extras).toBeUndefined();
      expect(made).not.toHaveProperty('fingerprint');
      expect(made).not.toHaveProperty('metadata.m');
    }
    const seen = await vault.tokens.create(revealer, { type: 'card', data: CARD, deduplicate_token: true });
    expect(seen).toMatchObject({ id: first.id, metadata: { m: 'x' }, _extras: { deduplicated: true } });
    expect(seen.fingerprint).toBe(first.fingerprint);
  });

  it('an update never finds a duplicate the caller cannot reveal, and a deduplicating update over data the caller cannot read is refused', async () => {
    const vault = await store.vault();
    const { revealer, publicApp } = await setup(vault);
    const fingerprint_expression = '{{ data.number }}-{{ data.cvc }}';
    // The victim's card (cvc 123), and a copy the attacker patches with cvc guesses.
    const victim = await vault.tokens.create(revealer, { type: 'card', data: CARD, fingerprint_expression, deduplicate_token: true });
    const copy = await vault.tokens.create(revealer, { type: 'card', data: { ...CARD, cvc: '000' }, fingerprint_expression });
    await refused(vault, revealer, () => vault.tokens.update(publicApp, copy.id, { data: { cvc: '123' }, deduplicate_token: true }), AuthorizationError, /deduplicat/);
    await refused(vault, revealer, () => vault.tokens.update(publicApp, victim.id, { data: { cvc: '124' } }), AuthorizationError, /deduplicat/);
    // The whole data written: the victim is no duplicate to a caller that cannot reveal it, so the
    // update is applied and the answer names only the token updated.
    const written = await vault.tokens.update(publicApp, copy.id, { data: CARD, deduplicate_token: true });
    expect(written).toEqual({ id: copy.id, type: 'card', tenant_id: vault.tenantId });
  });

  it('an update that keeps the fingerprint of a deduplicating token is never answered as a duplicate (no linkage oracle)', async () => {
    const vault = await store.vault();
    const { revealer, publicApp } = await setup(vault);
    const first = await vault.tokens.create(revealer, { type: 'card', data: CARD, deduplicate_token: true });
    const second = await vault.tokens.create(revealer, { type: 'card', data: CARD });
    // Would tell a key that cannot read either card that they hold the same number.
    const updated = await vault.tokens.update(publicApp, first.id, { metadata: { note: 'x' } });
    expect(updated.id).toBe(first.id);
    expect(updated._extras).toBeUndefined();
    expect((await vault.tokens.get(revealer, first.id)).metadata).toEqual({ note: 'x' });
    expect(second.id).not.toBe(first.id);
  });
});

describeEachStore('disclosure: the id guard', (store) => {
  it('an id expression may use data only through an alias filter (400 naming id, nothing stored)', async () => {
    const vault = await store.vault();
    const { revealer } = await setup(vault);
    for (const id of [
      'card-{{ data.cvc }}-x',
      '{{ data.number | slice: 0, 6 }}',
      'card-{{ data.number | last4 }}',
      '{{ data.number | alias_preserve_format: 0, 0 | append: data.cvc }}',
      '{% if data.number contains "4242" %}a{% endif %}b',
      '{% assign n = data.number %}{{ n | alias_card }}',
      '{{ data.cvc | alias_preserve_format }}',
      "{{ data['cvc'] | alias_preserve_length }}",
      "{% assign x = 'cvc' %}{{ data[x] | alias_preserve_format: 2, 0 }}",
      '{{ data.number | alias_preserve_format: 8, 4 }}',
      '{{ data.number | alias_preserve_format: 0, 5 }}',
      '{{ data | alias_preserve_length }}',
      // Two aliases of one field keeping different ends spell it out (found by the red-team pass).
      '{{ data.number | alias_preserve_format: 6, 0 }}-{{ data.number | alias_preserve_format: 0, 4 }}-{{ data.number | alias_preserve_format: 0, 4 }}',
    ]) {
      await refused(vault, revealer, () => vault.tokens.create(revealer, { id, type: 'card', data: CARD }), ValidationError, /"id"/);
    }
    const aliased = await vault.tokens.create(revealer, { id: 'card-{{ data.number | alias_card }}', type: 'card', data: CARD });
    expect(aliased.id).toMatch(/^card-424242\d{6}4242$/);
    expect(aliased.id).not.toBe('card-4242424242424242');
    const kept = await vault.tokens.create(revealer, { id: "c-{{ data['number'] | alias_preserve_length: 6, 4 }}", type: 'card', data: CARD });
    expect(kept.id).toMatch(/^c-424242\w{6}4242$/);
  });

  it('literal ids are compared after normalization: zero-width, full-width and separated digits, and the cvc of any length', async () => {
    const vault = await store.vault();
    const { revealer } = await setup(vault);
    const zw = '\u200b';
    for (const id of [
      `x4242${zw}424242424242`,
      'x４２４２４２４２４２４２４２４２',
      'x4242-4242-4242-4242',
      'x4242.4242.4242.4242',
      'order-123',
      'order-1-2-3',
      `order-1${zw}23`,
      'order-１２３',
    ]) {
      await refused(vault, revealer, () => vault.tokens.create(revealer, { id, type: 'card', data: CARD }), ValidationError, /"id"/);
    }
    await refused(vault, revealer, () => vault.tokens.create(revealer, { id: 'acme-Secret', type: 'token', data: { s: 'secret' } }), ValidationError, /"id"/);
    // Short values other than the cvc, and unrelated digits, are fine.
    expect((await vault.tokens.create(revealer, { id: 'order-12-2031x', type: 'card_number', data: CARD.number })).id).toBe('order-12-2031x');
    expect((await vault.tokens.create(revealer, { id: 'order-7', type: 'card', data: CARD })).id).toBe('order-7');
  });
});

describeEachStore('disclosure: bad input is a 400 that changes nothing', (store) => {
  it('tokenize with a 20,000-deep body, a metadata.__proto__ search term, 101 list metadata filters, 101 data terms', async () => {
    const vault = await store.vault();
    const { revealer } = await setup(vault);
    let deep: unknown = { type: 'token', data: 'x' };
    for (let i = 0; i < 20_000; i++) deep = { a: deep };
    await refused(vault, revealer, () => vault.tokens.tokenize(revealer, deep), ValidationError, /nests deeper/);
    const proto = await vault.tokens.create(revealer, { type: 'token', data: 'x', metadata: JSON.parse('{"__proto__":"m"}') as Record<string, string> });
    expect((await vault.tokens.search(revealer, { query: 'metadata.__proto__:m' })).data.map((t) => t.id)).toEqual([proto.id]);
    expect((await vault.tokens.search(revealer, { query: 'metadata.constructor:m' })).data).toEqual([]);
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, 'v']));
    await refused(vault, revealer, () => vault.tokens.list(revealer, { metadata: many }), ValidationError, /at most 100/);
    const terms = Array.from({ length: 101 }, (_, i) => `metadata.k${i}:v`).join(' ');
    await refused(vault, revealer, () => vault.tokens.search(revealer, { query: terms }), ValidationError, /100 metadata/);
    // Each data: term is a clause of the store's query: at most as many as a token has search indexes.
    const dataTerms = (n: number) => Array.from({ length: n }, (_, i) => `data:v${i}`).join(' ');
    await refused(vault, revealer, () => vault.tokens.search(revealer, { query: dataTerms(101) }), ValidationError, /more than 100 data terms/);
    expect((await vault.tokens.search(revealer, { query: dataTerms(100) })).data).toEqual([]);
    const hundred = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, 'v']));
    expect((await vault.tokens.list(revealer, { metadata: hundred })).data).toEqual([]);
  });
});

describeEachStore('disclosure: an id expression aliases data once', (store) => {
  it('refuses several aliases of the same bank fields, which together would spell them out (400, nothing stored)', async () => {
    const vault = await store.vault();
    const { publicApp, revealer } = await setup(vault);
    const data = { routing_number: '021000021', account_number: '1234567890' };
    const id =
      '{{ data.routing_number | alias_preserve_format: 6, 0 }}-{{ data.routing_number | alias_preserve_format: 0, 3 }}-' +
      '{{ data.account_number | alias_preserve_format: 6, 0 }}-{{ data.account_number | alias_preserve_format: 0, 4 }}';
    await refused(vault, revealer, () => vault.tokens.create(publicApp, { id, type: 'bank', data }), ValidationError, /"id"/);
    const one = await vault.tokens.create(publicApp, { id: 'b-{{ data.account_number | alias_preserve_format: 0, 4 }}', type: 'bank', data });
    expect(one.id).toMatch(/^b-\d{6}7890$/);
    expect(one.id).not.toContain(data.account_number);
  });
});

describeEachStore('disclosure: an update without token:read', (store) => {
  it('answers with the identity only: PATCH {} does not read metadata, containers or expressions (red-team finding)', async () => {
    const vault = await store.vault();
    const { revealer, publicApp } = await setup(vault);
    const card = await vault.tokens.create(revealer, { type: 'card', data: CARD, metadata: { customer: 'cus_42' }, search_indexes: ['{{ data.number | last4 }}'] });
    expect(await vault.tokens.update(publicApp, card.id, {})).toEqual({ id: card.id, type: 'card', tenant_id: vault.tenantId });
    // A reader (mask) still gets the token as its transform shows it.
    const masker = await vault.caller({ permissions: ['token:read', 'token:update'] });
    expect(await vault.tokens.update(masker, card.id, {})).toMatchObject({ id: card.id, metadata: { customer: 'cus_42' }, data: { number: 'XXXXXXXXXXXX4242' } });
  });
});
