import { beforeEach, describe, expect, it } from 'vitest';
import type { Store, StoredToken } from '../storage/store.js';
import { APP_A, APP_B, HOUR, T0, TENANT_A, TENANT_B, hex, makeAudit, makeToken, plain, tokenHelpers } from './store-fixtures.js';

/** Registers the Store conformance tests of token creation, conflicts, updates and deletion (see runStoreConformance). */
export function tokenWriteConformance(current: () => Store): void {
  let store: Store;
  beforeEach(() => {
    store = current();
  });
  const { create, createAll, update, remove, listIds, auditOf } = tokenHelpers(() => store);

  describe('tokens: create and get', () => {
    it('round-trips every field; ciphertext comes back as a Uint8Array with the same bytes', async () => {
      const token = makeToken({
        type: 'card',
        mask: { number: '{{ data.number | reveal_last: 4 }}', expiration_month: '{{ data.expiration_month }}' },
        containers: ['/pci/high/', '/pci/low/'],
        metadata: { Customer: 'Alice', plan: 'Gold' },
        searchIndexes: ['{{ data.number | last4 }}'],
        searchHashes: ['h-1', 'h-2'],
        deduplicate: true,
        keyVersion: 3,
        expiresAt: T0 + 10 * HOUR,
        cvcPurgeAt: T0 + HOUR,
        modifiedBy: APP_B,
        modifiedAt: T0 + 5,
      });
      expect(await create(token)).toEqual({ status: 'created' });
      const got = await store.getToken(TENANT_A, token.id, T0);
      expect(got).not.toBeNull();
      expect(got!.ciphertext).toBeInstanceOf(Uint8Array);
      expect(plain(got!)).toEqual(plain(token));
    });

    it('round-trips null fields and non-object masks', async () => {
      const nulls = makeToken({ fingerprint: null, fingerprintExpression: null, mask: null });
      const arrayMask = makeToken({ mask: ['{{ data | last4 }}', 1, true, null] });
      const stringMask = makeToken({ mask: '{{ data | last4 }}' });
      await createAll([nulls, arrayMask, stringMask]);
      for (const token of [nulls, arrayMask, stringMask]) expect(plain((await store.getToken(TENANT_A, token.id, T0))!)).toEqual(plain(token));
    });

    it('accepts a Buffer ciphertext as well as a Uint8Array', async () => {
      const token = makeToken({ ciphertext: Buffer.from('buffer ciphertext') });
      await createAll([token]);
      expect(hex((await store.getToken(TENANT_A, token.id, T0))!.ciphertext)).toBe(hex(Buffer.from('buffer ciphertext')));
    });

    it("returns null for an unknown id and for another tenant's token", async () => {
      const b = makeToken({ tenantId: TENANT_B });
      await createAll([b]);
      expect(await store.getToken(TENANT_A, 'no-such-token', T0)).toBeNull();
      expect(await store.getToken(TENANT_A, b.id, T0)).toBeNull();
      expect(await store.getToken(TENANT_B, b.id, T0)).not.toBeNull();
    });

    it('keeps ids per tenant: the same id in two tenants is two tokens', async () => {
      const a = makeToken({ id: 'shared-id', ciphertext: new Uint8Array([0xa]) });
      const b = makeToken({ id: 'shared-id', tenantId: TENANT_B, ciphertext: new Uint8Array([0xb]) });
      await createAll([a, b]);
      expect(hex((await store.getToken(TENANT_A, 'shared-id', T0))!.ciphertext)).toBe('0a');
      expect(hex((await store.getToken(TENANT_B, 'shared-id', T0))!.ciphertext)).toBe('0b');
    });

    it('writes no audit entry (the service audits creations in batches); a taken id writes nothing', async () => {
      const token = makeToken({ id: 'unaudited' });
      expect(await store.createToken(token, T0)).toEqual({ status: 'created' });
      expect(await store.getToken(TENANT_A, 'unaudited', T0)).not.toBeNull();
      expect(await auditOf(TENANT_A, 'unaudited')).toEqual([]);
      expect(await store.createToken(makeToken({ id: 'unaudited', ciphertext: new Uint8Array([7]) }), T0)).toEqual({ status: 'id_conflict' });
      expect(hex((await store.getToken(TENANT_A, 'unaudited', T0))!.ciphertext)).toBe(hex(token.ciphertext));
      await store.deleteToken(TENANT_A, 'unaudited', APP_A, makeAudit({ resourceId: 'unaudited' }), T0);
      expect(await store.createToken(makeToken({ id: 'unaudited' }), T0)).toEqual({ status: 'id_conflict' });
    });
  });

  describe('tokens: create conflicts and deduplication', () => {
    it("returns id_conflict for a live token's id and writes nothing", async () => {
      const first = makeToken({ id: 'taken' });
      await createAll([first]);
      expect(await create(makeToken({ id: 'taken', ciphertext: new Uint8Array([9]) }))).toEqual({ status: 'id_conflict' });
      expect(hex((await store.getToken(TENANT_A, 'taken', T0))!.ciphertext)).toBe(hex(first.ciphertext));
      expect(await auditOf(TENANT_A, 'taken')).toEqual([]);
    });

    it('returns id_conflict for an expired token not yet swept', async () => {
      await createAll([makeToken({ id: 'expired', expiresAt: T0 + 1 })]);
      expect(await create(makeToken({ id: 'expired' }), T0 + 2)).toEqual({ status: 'id_conflict' });
    });

    it('never reuses the id of a deleted token', async () => {
      await createAll([makeToken({ id: 'gone' })]);
      expect(await remove(TENANT_A, 'gone')).toBe(true);
      expect(await create(makeToken({ id: 'gone' }))).toEqual({ status: 'id_conflict' });
      expect(await store.getToken(TENANT_A, 'gone', T0)).toBeNull();
    });

    it('never reuses the id of a deleted token among concurrent creations (one batch)', async () => {
      await createAll([makeToken({ id: 'gone-in-batch' })]);
      expect(await remove(TENANT_A, 'gone-in-batch')).toBe(true);
      const results = await Promise.all(['fresh-1', 'gone-in-batch', 'fresh-2'].map((id) => store.createToken(makeToken({ id }), T0)));
      expect(results).toEqual([{ status: 'created' }, { status: 'id_conflict' }, { status: 'created' }]);
      expect(await store.getToken(TENANT_A, 'gone-in-batch', T0)).toBeNull();
      expect(await store.getToken(TENANT_A, 'fresh-2', T0)).not.toBeNull();
    });

    it('never reuses the id of a purged token', async () => {
      await createAll([makeToken({ id: 'purged', expiresAt: T0 + 1 })]);
      expect((await store.purgeExpiredTokens(T0 + 1, 10)).length).toBe(1);
      expect(await create(makeToken({ id: 'purged' }), T0 + 2)).toEqual({ status: 'id_conflict' });
    });

    it('a deleted id of another tenant does not conflict', async () => {
      await createAll([makeToken({ id: 'other', tenantId: TENANT_B })]);
      await remove(TENANT_B, 'other');
      expect(await create(makeToken({ id: 'other' }))).toEqual({ status: 'created' });
    });

    it('returns the live token of the same tenant, type and fingerprint as a duplicate and writes nothing', async () => {
      const original = makeToken({ fingerprint: 'same', type: 'card' });
      await createAll([original]);
      const again = makeToken({ fingerprint: 'same', type: 'card', deduplicate: true });
      const result = await create(again);
      expect(result.status).toBe('duplicate');
      if (result.status !== 'duplicate') return;
      expect(plain(result.existing)).toEqual(plain(original));
      expect(await store.getToken(TENANT_A, again.id, T0)).toBeNull();
      expect(await auditOf(TENANT_A, again.id)).toEqual([]);
    });

    it('checks for a duplicate before the id: same id and fingerprint with deduplicate is a duplicate', async () => {
      await createAll([makeToken({ id: 'dup-id', fingerprint: 'fp-dup' })]);
      const result = await create(makeToken({ id: 'dup-id', fingerprint: 'fp-dup', deduplicate: true }));
      expect(result.status).toBe('duplicate');
    });

    it('does not deduplicate without the flag, across types, across tenants, against expired tokens, or on a null fingerprint', async () => {
      await createAll([
        makeToken({ fingerprint: 'f', type: 'card' }),
        makeToken({ fingerprint: 'g', type: 'card', expiresAt: T0 + 1 }),
        makeToken({ fingerprint: null, deduplicate: true }),
      ]);
      const later = T0 + 1;
      expect(await create(makeToken({ fingerprint: 'f', type: 'card', deduplicate: false }), later)).toEqual({ status: 'created' });
      expect(await create(makeToken({ fingerprint: 'f', type: 'bank', deduplicate: true }), later)).toEqual({ status: 'created' });
      expect(await create(makeToken({ fingerprint: 'f', type: 'card', deduplicate: true, tenantId: TENANT_B }), later)).toEqual({ status: 'created' });
      expect(await create(makeToken({ fingerprint: 'g', type: 'card', deduplicate: true }), later)).toEqual({ status: 'created' });
      expect(await create(makeToken({ fingerprint: null, deduplicate: true }), later)).toEqual({ status: 'created' });
    });
  });

  describe('tokens: update', () => {
    it('replaces the mutable fields, keeps the creation stamp, and writes the audit entry', async () => {
      const original = makeToken({ metadata: { color: 'red' }, searchHashes: ['old-hash'], containers: ['/a/'] });
      await createAll([original]);
      const next: StoredToken = {
        ...original,
        ciphertext: new Uint8Array([1, 2, 3]),
        keyVersion: 2,
        fingerprint: 'new-fp',
        fingerprintExpression: '{{ data.x }}',
        mask: { x: '{{ data.x | last4 }}' },
        containers: ['/b/'],
        metadata: { size: 'L' },
        searchIndexes: ['{{ data.x }}'],
        searchHashes: ['new-hash'],
        deduplicate: true,
        modifiedBy: APP_B,
        modifiedAt: T0 + 10,
        expiresAt: T0 + HOUR,
        cvcPurgeAt: T0 + 2 * HOUR,
        createdBy: 'someone-else',
        createdAt: T0 + 999,
      };
      expect(await update(next, T0 + 10)).toEqual({ status: 'updated' });
      const got = await store.getToken(TENANT_A, original.id, T0 + 10);
      expect(plain(got!)).toEqual(plain({ ...next, createdBy: original.createdBy, createdAt: original.createdAt }));
      expect((await auditOf(TENANT_A, original.id)).map((e) => e.operation)).toEqual(['token:update']);
    });

    it('replaces the metadata, search hashes and fingerprint used by filters', async () => {
      const original = makeToken({ metadata: { color: 'red' }, searchHashes: ['old-hash'], fingerprint: 'old-fp', containers: ['/a/'] });
      await createAll([original]);
      await update({ ...original, metadata: { color: 'blue' }, searchHashes: ['new-hash'], fingerprint: 'new-fp', containers: ['/b/'] });
      expect(await listIds({ metadata: { color: 'red' } })).toEqual([]);
      expect(await listIds({ metadata: { color: 'blue' } })).toEqual([original.id]);
      expect(await listIds({ searchHashes: ['old-hash'] })).toEqual([]);
      expect(await listIds({ searchHashes: ['new-hash'] })).toEqual([original.id]);
      expect(await listIds({ fingerprints: ['old-fp'] })).toEqual([]);
      expect(await listIds({ fingerprints: ['new-fp'] })).toEqual([original.id]);
      expect(await listIds({ containers: ['/a/'] })).toEqual([]);
      expect(await listIds({ containers: ['/b/'] })).toEqual([original.id]);
    });

    it("returns not_found for an unknown id, another tenant's token and an expired token, writing nothing", async () => {
      const b = makeToken({ tenantId: TENANT_B });
      const expiring = makeToken({ expiresAt: T0 + 1 });
      await createAll([b, expiring]);
      expect(await update(makeToken({ id: 'nope' }))).toEqual({ status: 'not_found' });
      expect(await update({ ...b, tenantId: TENANT_A, ciphertext: new Uint8Array([7]) })).toEqual({ status: 'not_found' });
      expect(hex((await store.getToken(TENANT_B, b.id, T0))!.ciphertext)).toBe(hex(b.ciphertext));
      expect(await update({ ...expiring, expiresAt: null, ciphertext: new Uint8Array([7]) }, T0 + 1)).toEqual({ status: 'not_found' });
      expect(plain((await store.getToken(TENANT_A, expiring.id, T0))!)).toEqual(plain(expiring));
      expect(await store.getToken(TENANT_A, 'nope', T0)).toBeNull();
    });

    it('returns another live token with the new fingerprint as a duplicate and writes nothing', async () => {
      const other = makeToken({ fingerprint: 'taken-fp', type: 'card' });
      const mine = makeToken({ fingerprint: 'mine', type: 'card' });
      await createAll([other, mine]);
      const result = await update({ ...mine, fingerprint: 'taken-fp', deduplicate: true, ciphertext: new Uint8Array([5]) });
      expect(result.status).toBe('duplicate');
      if (result.status !== 'duplicate') return;
      expect(result.existing.id).toBe(other.id);
      expect(plain((await store.getToken(TENANT_A, mine.id, T0))!)).toEqual(plain(mine));
      // An update that found a duplicate writes nothing, its audit entry included.
      expect(await auditOf(TENANT_A, mine.id)).toEqual([]);
    });

    it('probes for a duplicate only when the update changes the fingerprint or turns deduplication on', async () => {
      const other = makeToken({ fingerprint: 'shared', type: 'card' });
      const mine = makeToken({ fingerprint: 'shared', type: 'card', deduplicate: true });
      // Created in this order (mine first), both hold the fingerprint although mine deduplicates.
      await createAll([mine, other]);
      expect(await update({ ...mine, metadata: { k: 'v' } })).toEqual({ status: 'updated' });
      expect((await store.getToken(TENANT_A, mine.id, T0))!.metadata).toEqual({ k: 'v' });
      const plainOne = makeToken({ fingerprint: 'shared', type: 'card' });
      await createAll([plainOne]);
      const turnedOn = await update({ ...plainOne, deduplicate: true });
      expect(turnedOn.status).toBe('duplicate');
    });

    it('does not count the token itself, expired tokens, other types or other tenants as duplicates', async () => {
      const mine = makeToken({ fingerprint: 'fp-x', type: 'card' });
      await createAll([
        mine,
        makeToken({ fingerprint: 'fp-expired', type: 'card', expiresAt: T0 + 1 }),
        makeToken({ fingerprint: 'fp-bank', type: 'bank' }),
        makeToken({ fingerprint: 'fp-b', type: 'card', tenantId: TENANT_B }),
      ]);
      const later = T0 + 1;
      expect(await update({ ...mine, deduplicate: true }, later)).toEqual({ status: 'updated' });
      for (const fingerprint of ['fp-expired', 'fp-bank', 'fp-b']) {
        expect(await update({ ...mine, fingerprint, deduplicate: true }, later)).toEqual({ status: 'updated' });
      }
      expect(await update({ ...mine, fingerprint: 'fp-bank', deduplicate: false }, later)).toEqual({ status: 'updated' });
    });
  });

  describe('tokens: delete', () => {
    it('removes the token, leaves a reference record and writes the audit entry', async () => {
      const token = makeToken({ type: 'card', metadata: { k: 'v' }, searchHashes: ['h'], fingerprint: 'f' });
      await createAll([token]);
      expect(await remove(TENANT_A, token.id, T0 + 5, APP_B)).toBe(true);
      expect(await store.getToken(TENANT_A, token.id, T0 + 5)).toBeNull();
      expect(await store.getDeletedToken(TENANT_A, token.id)).toEqual({ tenantId: TENANT_A, id: token.id, type: 'card', deletedAt: T0 + 5, deletedBy: APP_B });
      for (const filter of [{}, { metadata: { k: 'v' } }, { searchHashes: ['h'] }, { fingerprints: ['f'] }, { ids: [token.id] }, { types: ['card'] }]) {
        expect(await listIds(filter, T0 + 5)).toEqual([]);
      }
      expect(await store.listTokensBelowKeyVersion(TENANT_A, 99, 10)).toEqual([]);
      expect((await auditOf(TENANT_A, token.id)).map((e) => [e.operation, e.actor])).toEqual([['token:delete', APP_B]]);
    });

    it("returns false for an unknown, already deleted or expired token, and for another tenant's token", async () => {
      const b = makeToken({ tenantId: TENANT_B });
      const expiring = makeToken({ expiresAt: T0 + 1 });
      const once = makeToken();
      await createAll([b, expiring, once]);
      expect(await remove(TENANT_A, 'nope')).toBe(false);
      expect(await remove(TENANT_A, once.id)).toBe(true);
      expect(await remove(TENANT_A, once.id)).toBe(false);
      expect(await remove(TENANT_A, expiring.id, T0 + 1)).toBe(false);
      expect(await store.getDeletedToken(TENANT_A, expiring.id)).toBeNull();
      expect(await remove(TENANT_A, b.id)).toBe(false);
      expect(await store.getToken(TENANT_B, b.id, T0)).not.toBeNull();
      expect(await store.getDeletedToken(TENANT_A, b.id)).toBeNull();
      expect(await store.getDeletedToken(TENANT_B, b.id)).toBeNull();
    });

    it('keeps reference records per tenant', async () => {
      await createAll([makeToken({ id: 'ref', tenantId: TENANT_B })]);
      await remove(TENANT_B, 'ref');
      expect(await store.getDeletedToken(TENANT_A, 'ref')).toBeNull();
      expect((await store.getDeletedToken(TENANT_B, 'ref'))?.tenantId).toBe(TENANT_B);
    });
  });
}
