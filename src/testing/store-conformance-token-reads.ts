import { beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../errors/errors.js';
import type { Store, TokenFilter } from '../storage/store.js';
import { T0, TENANT_A, TENANT_B, cursor, makeToken, offset, plain, tokenHelpers } from './store-fixtures.js';

/** Registers the Store conformance tests of token listing, paging and filters (see runStoreConformance). */
export function tokenReadConformance(current: () => Store): void {
  let store: Store;
  beforeEach(() => {
    store = current();
  });
  const { createAll, remove, listIds } = tokenHelpers(() => store);

  describe('tokens: listing and paging', () => {
    const ORDER = ['e', 'c', 'a', 'd', 'b'];

    it('lists live tokens in creation order (not id order)', async () => {
      await createAll(ORDER.map((id) => makeToken({ id })));
      expect(await listIds()).toEqual(ORDER);
      const all = await store.listTokens(TENANT_A, {}, cursor(10), T0);
      expect(all.items.map((t) => t.id)).toEqual(ORDER);
      expect(plain(all.items[0]!)).toEqual(plain((await store.getToken(TENANT_A, 'e', T0))!));
    });

    it('pages with cursors: next is a string until the last page, null on it', async () => {
      await createAll(ORDER.map((id) => makeToken({ id })));
      const one = await store.listTokens(TENANT_A, {}, cursor(2), T0);
      if (one.mode !== 'cursor') throw new Error('cursor mode expected');
      expect(one.items.map((t) => t.id)).toEqual(['e', 'c']);
      expect(typeof one.next).toBe('string');
      const two = await store.listTokens(TENANT_A, {}, cursor(2, one.next!), T0);
      if (two.mode !== 'cursor') throw new Error('cursor mode expected');
      expect(two.items.map((t) => t.id)).toEqual(['a', 'd']);
      const three = await store.listTokens(TENANT_A, {}, cursor(2, two.next!), T0);
      expect(three).toMatchObject({ mode: 'cursor', next: null });
      expect(three.items.map((t) => t.id)).toEqual(['b']);
    });

    it('returns next null on a page that ends exactly at the last token', async () => {
      await createAll(['w', 'x', 'y', 'z'].map((id) => makeToken({ id })));
      const one = await store.listTokens(TENANT_A, {}, cursor(2), T0);
      if (one.mode !== 'cursor') throw new Error('cursor mode expected');
      expect(one.next).not.toBeNull();
      const two = await store.listTokens(TENANT_A, {}, cursor(2, one.next!), T0);
      expect(two).toMatchObject({ mode: 'cursor', next: null });
      expect(two.items.map((t) => t.id)).toEqual(['y', 'z']);
      const exact = await store.listTokens(TENANT_A, {}, cursor(4), T0);
      expect(exact).toMatchObject({ mode: 'cursor', next: null });
      expect(exact.items).toHaveLength(4);
    });

    it('returns an empty page with next null, or totalItems 0, when nothing matches', async () => {
      expect(await store.listTokens(TENANT_A, {}, cursor(5), T0)).toEqual({ mode: 'cursor', items: [], next: null });
      expect(await store.listTokens(TENANT_A, {}, offset(5, 1), T0)).toEqual({ mode: 'offset', items: [], totalItems: 0 });
      await createAll([makeToken({ tenantId: TENANT_B })]);
      expect(await store.listTokens(TENANT_A, {}, cursor(5), T0)).toEqual({ mode: 'cursor', items: [], next: null });
    });

    it('pages by offset with totalItems, including pages past the end', async () => {
      await createAll(ORDER.map((id) => makeToken({ id })));
      await createAll([makeToken({ tenantId: TENANT_B })]);
      const pages = [];
      for (const page of [1, 2, 3, 4]) pages.push(await store.listTokens(TENANT_A, {}, offset(2, page), T0));
      expect(pages.map((p) => p.items.map((t) => t.id))).toEqual([['e', 'c'], ['a', 'd'], ['b'], []]);
      expect(pages.map((p) => (p.mode === 'offset' ? p.totalItems : -1))).toEqual([5, 5, 5, 5]);
    });

    it('a cursor keeps its place: tokens created meanwhile come later, deleted ones are skipped, none twice', async () => {
      await createAll(['p1', 'p2', 'p3'].map((id) => makeToken({ id })));
      const one = await store.listTokens(TENANT_A, {}, cursor(2), T0);
      if (one.mode !== 'cursor') throw new Error('cursor mode expected');
      await createAll(['p4', 'p5'].map((id) => makeToken({ id })));
      await remove(TENANT_A, 'p3');
      const seen = one.items.map((t) => t.id);
      let start = one.next;
      while (start !== null) {
        const page = await store.listTokens(TENANT_A, {}, cursor(2, start), T0);
        if (page.mode !== 'cursor') throw new Error('cursor mode expected');
        seen.push(...page.items.map((t) => t.id));
        start = page.next;
      }
      expect(seen).toEqual(['p1', 'p2', 'p4', 'p5']);
    });

    it('rejects a cursor it did not issue with ValidationError on start', async () => {
      await createAll([makeToken()]);
      for (const start of ['%%%', 'not a cursor!', '@@@@']) {
        const attempt = Promise.resolve().then(() => store.listTokens(TENANT_A, {}, cursor(2, start), T0));
        await expect(attempt).rejects.toBeInstanceOf(ValidationError);
        await expect(attempt).rejects.toMatchObject({ errors: { start: expect.any(Array) } });
      }
    });
  });

  describe('tokens: filters', () => {
    it("filters by ids (several, one, unknown, another tenant's), in creation order", async () => {
      const [x, y, z] = await createAll([makeToken(), makeToken(), makeToken()]);
      const b = makeToken({ tenantId: TENANT_B });
      await createAll([b]);
      expect(await listIds({ ids: [z!.id, x!.id, 'unknown', b.id] })).toEqual([x!.id, z!.id]);
      expect(await listIds({ ids: [y!.id] })).toEqual([y!.id]);
      expect(await listIds({ ids: [b.id] })).toEqual([]);
    });

    it('filters by types', async () => {
      const [card, bank] = await createAll([makeToken({ type: 'card' }), makeToken({ type: 'bank' }), makeToken({ type: 'token' })]);
      await createAll([makeToken({ type: 'card', tenantId: TENANT_B })]);
      expect(await listIds({ types: ['card'] })).toEqual([card!.id]);
      expect(await listIds({ types: ['bank', 'card'] })).toEqual([card!.id, bank!.id]);
      expect(await listIds({ types: ['ssn'] })).toEqual([]);
    });

    it('filters by metadata: keys and values case-insensitively and exactly, several keys ANDed', async () => {
      const [alice, aliceGold, bob] = await createAll([
        makeToken({ metadata: { Customer: 'Alice' } }),
        makeToken({ metadata: { customer: 'ALICE', Plan: 'Gold' } }),
        makeToken({ metadata: { customer: 'Bob', plan: 'gold' } }),
      ]);
      await createAll([makeToken({ tenantId: TENANT_B, metadata: { customer: 'alice' } })]);
      expect(await listIds({ metadata: { CUSTOMER: 'alice' } })).toEqual([alice!.id, aliceGold!.id]);
      expect(await listIds({ metadata: { customer: 'alice', plan: 'GOLD' } })).toEqual([aliceGold!.id]);
      expect(await listIds({ metadata: { plan: 'gold' } })).toEqual([aliceGold!.id, bob!.id]);
      expect(await listIds({ metadata: { customer: 'ali' } })).toEqual([]);
      expect(await listIds({ metadata: { customer: 'alice%' } })).toEqual([]);
      expect(await listIds({ metadata: { custom: 'alice' } })).toEqual([]);
      expect(await listIds({ metadata: { customer: 'bob', plan: 'silver' } })).toEqual([]);
    });

    it('filters by containers: a token matches when it has every one of them, exactly', async () => {
      const [pci, both, bank] = await createAll([
        makeToken({ containers: ['/pci/high/'] }),
        makeToken({ containers: ['/pci/low/', '/bank/high/'] }),
        makeToken({ containers: ['/bank/high/'] }),
      ]);
      await createAll([makeToken({ tenantId: TENANT_B, containers: ['/pci/high/'] })]);
      expect(await listIds({ containers: ['/pci/high/'] })).toEqual([pci!.id]);
      expect(await listIds({ containers: ['/bank/high/'] })).toEqual([both!.id, bank!.id]);
      expect(await listIds({ containers: ['/bank/high/', '/pci/low/'] })).toEqual([both!.id]);
      expect(await listIds({ containers: ['/pci/high/', '/bank/high/'] })).toEqual([]);
      expect(await listIds({ containers: ['/pci/'] })).toEqual([]);
    });

    it('filters by access scopes: every container of a token must lie under a prefix and under none of its exceptions', async () => {
      const [pciHigh, pciLow, mixed, bank, under] = await createAll([
        makeToken({ containers: ['/pci/high/'] }),
        makeToken({ containers: ['/pci/low/'] }),
        makeToken({ containers: ['/pci/high/', '/bank/high/'] }),
        makeToken({ containers: ['/bank/high/'] }),
        makeToken({ containers: ['/pci_x/'] }),
      ]);
      await createAll([makeToken({ tenantId: TENANT_B, containers: ['/pci/high/'] })]);
      const scope = (prefix: string, except: string[] = []) => ({ prefix, except });
      expect(await listIds({ within: [scope('/')] })).toEqual([pciHigh!.id, pciLow!.id, mixed!.id, bank!.id, under!.id]);
      // A prefix is a whole-segment ancestor: '/pci/' is not a prefix of '/pci_x/' ('_' is no wildcard).
      expect(await listIds({ within: [scope('/pci/')] })).toEqual([pciHigh!.id, pciLow!.id]);
      expect(await listIds({ within: [scope('/pci/', ['/pci/low/'])] })).toEqual([pciHigh!.id]);
      expect(await listIds({ within: [scope('/pci/high/'), scope('/bank/')] })).toEqual([pciHigh!.id, mixed!.id, bank!.id]);
      expect(await listIds({ within: [scope('/', ['/bank/'])] })).toEqual([pciHigh!.id, pciLow!.id, under!.id]);
      expect(await listIds({ within: [] })).toEqual([]);
      // ANDed with the other filters, and counted exactly in offset mode.
      expect(await listIds({ within: [scope('/pci/')], containers: ['/pci/low/'] })).toEqual([pciLow!.id]);
      const counted = await store.listTokens(TENANT_A, { within: [scope('/bank/'), scope('/pci/high/')] }, offset(1, 1), T0);
      expect(counted).toMatchObject({ mode: 'offset', totalItems: 3 });
      expect(counted.items.map((t) => t.id)).toEqual([pciHigh!.id]);
    });

    it('filters by fingerprints', async () => {
      const [f1, f2, f1again] = await createAll([makeToken({ fingerprint: 'f1' }), makeToken({ fingerprint: 'f2' }), makeToken({ fingerprint: 'f1', type: 'card' })]);
      await createAll([makeToken({ tenantId: TENANT_B, fingerprint: 'f1' }), makeToken({ fingerprint: null })]);
      expect(await listIds({ fingerprints: ['f1'] })).toEqual([f1!.id, f1again!.id]);
      expect(await listIds({ fingerprints: ['f2', 'f1'] })).toEqual([f1!.id, f2!.id, f1again!.id]);
      expect(await listIds({ fingerprints: ['f1'] }, T0, TENANT_B)).toHaveLength(1);
    });

    it("filters by search hashes: every hash must be among the token's (AND)", async () => {
      const [ab, a, abc] = await createAll([makeToken({ searchHashes: ['ha', 'hb'] }), makeToken({ searchHashes: ['ha'] }), makeToken({ searchHashes: ['ha', 'hb', 'hc'] })]);
      await createAll([makeToken({ tenantId: TENANT_B, searchHashes: ['ha', 'hb'] })]);
      expect(await listIds({ searchHashes: ['ha'] })).toEqual([ab!.id, a!.id, abc!.id]);
      expect(await listIds({ searchHashes: ['hb', 'ha'] })).toEqual([ab!.id, abc!.id]);
      expect(await listIds({ searchHashes: ['hc', 'ha', 'hb'] })).toEqual([abc!.id]);
      expect(await listIds({ searchHashes: ['hz'] })).toEqual([]);
    });

    it('ANDs different filters', async () => {
      const [match] = await createAll([
        makeToken({ type: 'card', metadata: { k: 'v' }, containers: ['/pci/high/'], searchHashes: ['h'], fingerprint: 'fp' }),
        makeToken({ type: 'bank', metadata: { k: 'v' }, containers: ['/pci/high/'], searchHashes: ['h'], fingerprint: 'fp' }),
        makeToken({ type: 'card', metadata: { k: 'w' }, containers: ['/pci/high/'], searchHashes: ['h'], fingerprint: 'fp' }),
        makeToken({ type: 'card', metadata: { k: 'v' }, containers: ['/pci/low/'], searchHashes: ['h'], fingerprint: 'fp' }),
        makeToken({ type: 'card', metadata: { k: 'v' }, containers: ['/pci/high/'], searchHashes: ['x'], fingerprint: 'fp' }),
        makeToken({ type: 'card', metadata: { k: 'v' }, containers: ['/pci/high/'], searchHashes: ['h'], fingerprint: 'other' }),
      ]);
      const filter: TokenFilter = { types: ['card'], metadata: { k: 'v' }, containers: ['/pci/high/'], searchHashes: ['h'], fingerprints: ['fp'] };
      expect(await listIds(filter)).toEqual([match!.id]);
      expect(await listIds({ ...filter, ids: [match!.id, 'other'] })).toEqual([match!.id]);
      expect(await listIds({ ...filter, ids: ['other'] })).toEqual([]);
      expect(await store.listTokens(TENANT_A, { types: ['card'], metadata: { k: 'v' } }, offset(10, 1), T0)).toMatchObject({ totalItems: 4 });
    });

    it('an empty list matches nothing; an empty metadata map or hash list constrains nothing', async () => {
      const [token] = await createAll([makeToken({ type: 'card', fingerprint: 'f' })]);
      for (const filter of [{ ids: [] }, { types: [] }, { containers: [] }, { fingerprints: [] }] as TokenFilter[]) {
        expect(await listIds(filter)).toEqual([]);
      }
      expect(await listIds({ metadata: {}, searchHashes: [] })).toEqual([token!.id]);
    });

    it('pages through filtered results in both modes', async () => {
      const tokens = await createAll(Array.from({ length: 7 }, (_, i) => makeToken({ metadata: { group: i % 2 === 0 ? 'even' : 'odd' }, type: 'card' })));
      const even = tokens.filter((_, i) => i % 2 === 0).map((t) => t.id);
      expect(await listIds({ metadata: { group: 'even' } })).toEqual(even);
      expect(await listIds({ metadata: { group: 'even' }, types: ['card'] })).toEqual(even);
      const second = await store.listTokens(TENANT_A, { metadata: { group: 'even' } }, offset(3, 2), T0);
      expect(second).toMatchObject({ mode: 'offset', totalItems: 4 });
      expect(second.items.map((t) => t.id)).toEqual(even.slice(3));
    });
  });
}
