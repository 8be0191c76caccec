import { beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../storage/store.js';
import { APP_A, EXPIRY_ACTOR, HOUR, T0, TENANT_A, TENANT_B, hex, makeToken, offset, plain, tokenHelpers } from './store-fixtures.js';

/** Registers the Store conformance tests of token expiry, cvc removal and key versions (see runStoreConformance). */
export function tokenLifecycleConformance(current: () => Store): void {
  let store: Store;
  beforeEach(() => {
    store = current();
  });
  const { createAll, update, remove, listIds, auditOf } = tokenHelpers(() => store);

  describe('tokens: expiry', () => {
    it('a token is live until expiresAt and invisible from then on, to get, list, filters, update and delete', async () => {
      const token = makeToken({ expiresAt: T0 + HOUR, metadata: { k: 'v' }, type: 'card', fingerprint: 'ef', searchHashes: ['eh'] });
      await createAll([token]);
      const before = T0 + HOUR - 1;
      const at = T0 + HOUR;
      expect(await store.getToken(TENANT_A, token.id, before)).not.toBeNull();
      expect(await listIds({}, before)).toEqual([token.id]);
      expect(await store.getToken(TENANT_A, token.id, at)).toBeNull();
      for (const filter of [
        {},
        { metadata: { k: 'v' } },
        { types: ['card'] },
        { ids: [token.id] },
        { fingerprints: ['ef'] },
        { searchHashes: ['eh'] },
        { containers: token.containers },
      ]) {
        expect(await listIds(filter, at)).toEqual([]);
      }
      expect(await store.listTokens(TENANT_A, {}, offset(10, 1), at)).toEqual({ mode: 'offset', items: [], totalItems: 0 });
      expect(await update({ ...token, expiresAt: null }, at)).toEqual({ status: 'not_found' });
      expect(await remove(TENANT_A, token.id, at)).toBe(false);
    });

    it('purgeExpiredTokens removes tokens (any tenant) with expiresAt <= now, leaving references and audit entries', async () => {
      const a = makeToken({ expiresAt: T0 + 10, type: 'card', metadata: { k: 'v' } });
      const b = makeToken({ expiresAt: T0 + 20, tenantId: TENANT_B });
      const later = makeToken({ expiresAt: T0 + 21 });
      const never = makeToken();
      await createAll([a, b, later, never]);
      expect(await store.purgeExpiredTokens(T0 + 20, 100)).toEqual([
        { tenantId: TENANT_A, id: a.id, type: 'card', expiresAt: T0 + 10 },
        { tenantId: TENANT_B, id: b.id, type: 'token', expiresAt: T0 + 20 },
      ]);
      expect(await store.getDeletedToken(TENANT_A, a.id)).toEqual({ tenantId: TENANT_A, id: a.id, type: 'card', deletedAt: T0 + 20, deletedBy: EXPIRY_ACTOR });
      expect(await store.getDeletedToken(TENANT_B, b.id)).toEqual({ tenantId: TENANT_B, id: b.id, type: 'token', deletedAt: T0 + 20, deletedBy: EXPIRY_ACTOR });
      const entries = await auditOf(TENANT_A, a.id);
      expect(entries.at(-1)).toMatchObject({ tenantId: TENANT_A, actor: EXPIRY_ACTOR, operation: 'token:delete', resourceId: a.id, outcome: 'success', at: T0 + 20 });
      expect((await auditOf(TENANT_B, b.id)).at(-1)).toMatchObject({ actor: EXPIRY_ACTOR, resourceId: b.id });
      // The data is gone, not just hidden: nothing finds it at any time, not even key-version scans.
      expect(await store.getToken(TENANT_A, a.id, T0)).toBeNull();
      expect(await listIds({ metadata: { k: 'v' } }, T0)).toEqual([]);
      expect((await store.listTokensBelowKeyVersion(TENANT_A, 99, 10)).map((t) => t.id).sort()).toEqual([later.id, never.id].sort());
      expect(await store.getToken(TENANT_A, later.id, T0 + 20)).not.toBeNull();
      expect(await store.getDeletedToken(TENANT_A, never.id)).toBeNull();
      expect((await store.purgeExpiredTokens(T0 + 20, 100)).length).toBe(0);
    });

    it('purgeExpiredTokens removes at most `limit` per call', async () => {
      await createAll(Array.from({ length: 5 }, (_, i) => makeToken({ expiresAt: T0 + i + 1 })));
      expect((await store.purgeExpiredTokens(T0 + 100, 2)).length).toBe(2);
      expect((await store.purgeExpiredTokens(T0 + 100, 2)).length).toBe(2);
      expect((await store.purgeExpiredTokens(T0 + 100, 2)).length).toBe(1);
      expect((await store.purgeExpiredTokens(T0 + 100, 2)).length).toBe(0);
    });

    it('concurrent purges remove each token once', async () => {
      await createAll(Array.from({ length: 6 }, () => makeToken({ expiresAt: T0 + 1 })));
      const removed = await Promise.all(Array.from({ length: 4 }, () => Promise.resolve().then(() => store.purgeExpiredTokens(T0 + 1, 2))));
      const ids = removed.flat().map((t) => t.id);
      expect(ids).toHaveLength(6);
      expect(new Set(ids).size).toBe(6);
    });
  });

  describe('tokens: cvc removal', () => {
    it('lists tokens of any tenant whose cvcPurgeAt is due, oldest first, up to the limit', async () => {
      const first = makeToken({ cvcPurgeAt: T0 + 1 });
      const second = makeToken({ cvcPurgeAt: T0 + 2, tenantId: TENANT_B });
      const third = makeToken({ cvcPurgeAt: T0 + 3 });
      const future = makeToken({ cvcPurgeAt: T0 + HOUR });
      const none = makeToken();
      await createAll([third, future, none, second, first]);
      expect((await store.listCvcDue(T0 + 3, 10)).map((t) => t.id)).toEqual([first.id, second.id, third.id]);
      expect((await store.listCvcDue(T0 + 3, 2)).map((t) => t.id)).toEqual([first.id, second.id]);
      expect(await store.listCvcDue(T0, 10)).toEqual([]);
      const [due] = await store.listCvcDue(T0 + 1, 1);
      expect(plain(due!)).toEqual(plain(first));
    });

    it('pages past the tokens of a page that stay due (ones the sweep could not rewrite), oldest first', async () => {
      const tokens = [
        makeToken({ cvcPurgeAt: T0 + 1 }),
        makeToken({ cvcPurgeAt: T0 + 1, tenantId: TENANT_B }),
        makeToken({ cvcPurgeAt: T0 + 1 }),
        makeToken({ cvcPurgeAt: T0 + 2 }),
        makeToken({ cvcPurgeAt: T0 + 2, tenantId: TENANT_B }),
      ];
      await createAll(tokens);
      const seen: string[] = [];
      let after: { cvcPurgeAt: number; tenantId: string; id: string } | undefined;
      for (let pages = 0; pages < 10; pages++) {
        // None is rewritten: every token stays due, and the cursor alone moves the pages on.
        const page = await store.listCvcDue(T0 + 2, 2, after);
        seen.push(...page.map((t) => t.id));
        const last = page.at(-1);
        if (page.length < 2 || last === undefined) break;
        after = { cvcPurgeAt: last.cvcPurgeAt!, tenantId: last.tenantId, id: last.id };
      }
      // Each once, oldest first (ties in the store's own text order, which the cursor follows).
      expect(seen).toHaveLength(tokens.length);
      expect(new Set(seen)).toEqual(new Set(tokens.map((t) => t.id)));
      expect(seen.slice(0, 3).every((id) => tokens.slice(0, 3).some((t) => t.id === id))).toBe(true);
    });

    it('replaceCiphertext writes only when the ciphertext is still the expected one', async () => {
      const token = makeToken({ cvcPurgeAt: T0 + 1 });
      await createAll([token]);
      const next = { ciphertext: new Uint8Array([0xc0, 0xff, 0xee]), keyVersion: 2, cvcPurgeAt: null };
      expect(await store.replaceCiphertext(TENANT_A, token.id, new Uint8Array([0xde, 0xad]), next)).toBe(false);
      let got = await store.getToken(TENANT_A, token.id, T0);
      expect([hex(got!.ciphertext), got!.keyVersion, got!.cvcPurgeAt]).toEqual([hex(token.ciphertext), 1, T0 + 1]);
      expect(await store.replaceCiphertext(TENANT_A, token.id, token.ciphertext, next)).toBe(true);
      got = await store.getToken(TENANT_A, token.id, T0);
      expect([hex(got!.ciphertext), got!.keyVersion, got!.cvcPurgeAt]).toEqual(['c0ffee', 2, null]);
      expect(await store.listCvcDue(T0 + 10, 10)).toEqual([]);
      // The old ciphertext is now stale.
      expect(await store.replaceCiphertext(TENANT_A, token.id, token.ciphertext, { ...next, ciphertext: new Uint8Array([1]) })).toBe(false);
    });

    it('replaceCiphertext loses to a concurrent update, and cannot reach another tenant', async () => {
      const token = makeToken({ cvcPurgeAt: T0 + 1 });
      await createAll([token]);
      const [due] = await store.listCvcDue(T0 + 1, 10);
      await update({ ...token, ciphertext: new Uint8Array([0x42]), cvcPurgeAt: null, modifiedAt: T0 + 1, modifiedBy: APP_A });
      expect(await store.replaceCiphertext(TENANT_A, token.id, due!.ciphertext, { ciphertext: new Uint8Array([0]), keyVersion: 1, cvcPurgeAt: null })).toBe(false);
      expect(hex((await store.getToken(TENANT_A, token.id, T0))!.ciphertext)).toBe('42');
      expect(await store.replaceCiphertext(TENANT_B, token.id, new Uint8Array([0x42]), { ciphertext: new Uint8Array([0]), keyVersion: 1, cvcPurgeAt: null })).toBe(false);
      expect(hex((await store.getToken(TENANT_A, token.id, T0))!.ciphertext)).toBe('42');
    });

    it('exactly one of many concurrent compare-and-sets with the same expected value wins', async () => {
      const token = makeToken();
      await createAll([token]);
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          Promise.resolve().then(() => store.replaceCiphertext(TENANT_A, token.id, token.ciphertext, { ciphertext: new Uint8Array([i]), keyVersion: 2, cvcPurgeAt: null })),
        ),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });
  });

  describe('tokens: key versions', () => {
    it("counts and lists a tenant's tokens below a key version, expired ones included", async () => {
      const v1 = makeToken({ keyVersion: 1 });
      const v1expired = makeToken({ keyVersion: 1, expiresAt: T0 + 1 });
      const v2 = makeToken({ keyVersion: 2 });
      const v3 = makeToken({ keyVersion: 3 });
      await createAll([v1, v1expired, v2, v3, makeToken({ keyVersion: 1, tenantId: TENANT_B })]);
      expect(await store.countTokensBelowKeyVersion(TENANT_A, 3)).toBe(3);
      expect(await store.countTokensBelowKeyVersion(TENANT_A, 2)).toBe(2);
      expect(await store.countTokensBelowKeyVersion(TENANT_A, 1)).toBe(0);
      expect(await store.countTokensBelowKeyVersion(TENANT_B, 3)).toBe(1);
      expect((await store.listTokensBelowKeyVersion(TENANT_A, 3, 10)).map((t) => t.id).sort()).toEqual([v1.id, v1expired.id, v2.id].sort());
      expect(await store.listTokensBelowKeyVersion(TENANT_A, 3, 2)).toHaveLength(2);
      expect(await store.listTokensBelowKeyVersion(TENANT_A, 1, 10)).toEqual([]);
      const [listed] = await store.listTokensBelowKeyVersion(TENANT_A, 2, 10);
      expect(plain(listed!)).toEqual(plain(v1));
    });

    it('a re-encryption loop (list a batch, compare-and-set each, repeat) reaches every token once', async () => {
      const tokens = await createAll(Array.from({ length: 7 }, (_, i) => makeToken({ keyVersion: 1 + (i % 2) })));
      const rewritten: string[] = [];
      for (let rounds = 0; rounds < 20; rounds++) {
        const batch = await store.listTokensBelowKeyVersion(TENANT_A, 3, 2);
        if (batch.length === 0) break;
        for (const token of batch) {
          expect(await store.replaceCiphertext(TENANT_A, token.id, token.ciphertext, { ciphertext: new Uint8Array([3]), keyVersion: 3, cvcPurgeAt: null })).toBe(true);
          rewritten.push(token.id);
        }
      }
      expect(rewritten.sort()).toEqual(tokens.map((t) => t.id).sort());
      expect(await store.countTokensBelowKeyVersion(TENANT_A, 3)).toBe(0);
      // A token written later under an old version is still found.
      const late = makeToken({ keyVersion: 1 });
      await createAll([late]);
      expect((await store.listTokensBelowKeyVersion(TENANT_A, 3, 10)).map((t) => t.id)).toEqual([late.id]);
    });

    it('re-encryption finds a token pushed below the version behind where its walk resumes', async () => {
      const tokens = await createAll(Array.from({ length: 4 }, () => makeToken({ keyVersion: 1 })));
      for (let batch = 0; batch < 2; batch++) {
        for (const token of await store.listTokensBelowKeyVersion(TENANT_A, 2, 2)) {
          await store.replaceCiphertext(TENANT_A, token.id, token.ciphertext, { ciphertext: new Uint8Array([2]), keyVersion: 2, cvcPurgeAt: null });
        }
      }
      // A writer that has not seen the rotation (another instance) writes the first token under version 1 again.
      await update({ ...tokens[0]!, keyVersion: 1 });
      expect((await store.listTokensBelowKeyVersion(TENANT_A, 2, 2)).map((t) => t.id)).toEqual([tokens[0]!.id]);
    });
  });
}
