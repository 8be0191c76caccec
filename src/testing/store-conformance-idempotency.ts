import { beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../errors/errors.js';
import type { IdempotencyRecord, Store } from '../storage/store.js';
import { APP_A, APP_B, HOUR, T0, TENANT_A, TENANT_B, cursor, makeAudit, makeIdempotency, makeToken, offset, plain, tokenHelpers } from './store-fixtures.js';

/** Registers the Store conformance tests of idempotency keys and the audit log (see runStoreConformance). */
export function idempotencyConformance(current: () => Store): void {
  let store: Store;
  beforeEach(() => {
    store = current();
  });
  const { createAll, remove } = tokenHelpers(() => store);

  describe('idempotency keys', () => {
    it('claims a key once; a second claim returns the in-flight record', async () => {
      const record = makeIdempotency({ key: 'k1' });
      expect(await store.claimIdempotencyKey(record, T0)).toEqual({ claimed: true });
      const again = await store.claimIdempotencyKey({ ...record, requestHash: 'hash-2', createdAt: T0 + 1 }, T0 + 1);
      expect(again).toEqual({ claimed: false, existing: { ...record, state: 'in_flight', status: null, body: null } });
    });

    const claimOf = (record: IdempotencyRecord) => ({ tenantId: record.tenantId, applicationId: record.applicationId, key: record.key, claimedAt: record.createdAt });
    const bytes = (text: string) => Buffer.from(text, 'utf8');
    const response = (status: number, body: string, expiresAt = T0 + 24 * HOUR, tokenIds: string[] = []) => ({ status, body: bytes(body), expiresAt, tokenIds });

    it('stores the response on completion, kept until the expiry given then; later claims return it', async () => {
      const record = makeIdempotency({ key: 'k2', expiresAt: T0 + 5 * 60_000 });
      await store.claimIdempotencyKey(record, T0);
      await store.completeIdempotencyKey(claimOf(record), response(201, '{"id":"tok"}', T0 + 24 * HOUR));
      const done = { ...record, state: 'done', status: 201, body: bytes('{"id":"tok"}'), expiresAt: T0 + 24 * HOUR };
      // Past the in-flight lease, the stored response still answers.
      expect(await store.claimIdempotencyKey(record, T0 + HOUR)).toEqual({ claimed: false, existing: done });
    });

    it('a released key can be claimed again; a completed one is not released', async () => {
      const record = makeIdempotency({ key: 'k3' });
      await store.claimIdempotencyKey(record, T0);
      await store.releaseIdempotencyKey(claimOf(record));
      const second = { ...record, requestHash: 'hash-2', createdAt: T0 + 1 };
      expect(await store.claimIdempotencyKey(second, T0 + 1)).toEqual({ claimed: true });
      await store.completeIdempotencyKey(claimOf(second), response(200, '{}'));
      await store.releaseIdempotencyKey(claimOf(second));
      expect(await store.claimIdempotencyKey(record, T0 + 2)).toMatchObject({ claimed: false, existing: { state: 'done', requestHash: 'hash-2' } });
    });

    it('replaces an expired record', async () => {
      const record = makeIdempotency({ key: 'k4', expiresAt: T0 + HOUR });
      await store.claimIdempotencyKey(record, T0);
      await store.completeIdempotencyKey(claimOf(record), response(200, '{}', T0 + HOUR));
      expect(await store.claimIdempotencyKey({ ...record, requestHash: 'hash-2' }, T0 + HOUR - 1)).toMatchObject({ claimed: false });
      const fresh = { ...record, requestHash: 'hash-3', createdAt: T0 + HOUR, expiresAt: T0 + 2 * HOUR };
      expect(await store.claimIdempotencyKey(fresh, T0 + HOUR)).toEqual({ claimed: true });
      expect(await store.claimIdempotencyKey(record, T0 + HOUR + 1)).toEqual({ claimed: false, existing: fresh });
    });

    it('an in-flight claim whose lease ran out can be claimed again, and the old claim can then neither complete nor release it', async () => {
      const stale = makeIdempotency({ key: 'k6', expiresAt: T0 + 60_000 });
      await store.claimIdempotencyKey(stale, T0);
      expect(await store.claimIdempotencyKey({ ...stale, createdAt: T0 + 1 }, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'in_flight' } });
      const fresh = { ...stale, createdAt: T0 + 60_000, expiresAt: T0 + 120_000 };
      expect(await store.claimIdempotencyKey(fresh, T0 + 60_000)).toEqual({ claimed: true });
      await store.completeIdempotencyKey(claimOf(stale), response(201, '"stale"'));
      await store.releaseIdempotencyKey(claimOf(stale));
      expect(await store.claimIdempotencyKey({ ...stale, createdAt: T0 + 60_001 }, T0 + 60_001)).toEqual({ claimed: false, existing: fresh });
      await store.completeIdempotencyKey(claimOf(fresh), response(201, '"fresh"'));
      expect(await store.claimIdempotencyKey(stale, T0 + 60_002)).toMatchObject({ claimed: false, existing: { state: 'done', body: bytes('"fresh"') } });
    });

    it('keys are scoped by tenant and application', async () => {
      const mine = makeIdempotency({ key: 'k5' });
      expect(await store.claimIdempotencyKey(mine, T0)).toEqual({ claimed: true });
      expect(await store.claimIdempotencyKey(makeIdempotency({ key: 'k5', applicationId: APP_B }), T0)).toEqual({ claimed: true });
      expect(await store.claimIdempotencyKey(makeIdempotency({ key: 'k5', tenantId: TENANT_B }), T0)).toEqual({ claimed: true });
      await store.completeIdempotencyKey({ ...claimOf(mine), tenantId: TENANT_B }, response(500, 'b'));
      await store.releaseIdempotencyKey({ ...claimOf(mine), applicationId: APP_B });
      expect(await store.claimIdempotencyKey(mine, T0)).toMatchObject({ claimed: false, existing: { state: 'in_flight' } });
    });

    it('purges expired records of any tenant, in flight or done, up to the limit, and keeps the rest', async () => {
      const doneExpired = makeIdempotency({ key: 'p1', expiresAt: T0 + HOUR });
      const leaseLapsed = makeIdempotency({ key: 'p2', tenantId: TENANT_B, expiresAt: T0 + HOUR - 1 });
      const live = makeIdempotency({ key: 'p3', expiresAt: T0 + HOUR + 1 });
      for (const record of [doneExpired, leaseLapsed, live]) await store.claimIdempotencyKey(record, T0);
      await store.completeIdempotencyKey(claimOf(doneExpired), response(200, '{}', T0 + HOUR));
      expect(await store.purgeExpiredIdempotencyKeys(T0 + HOUR, 1)).toBe(1);
      expect(await store.purgeExpiredIdempotencyKeys(T0 + HOUR, 10)).toBe(1);
      expect(await store.purgeExpiredIdempotencyKeys(T0 + HOUR, 10)).toBe(0);
      // The live record still answers; the purged keys can be claimed afresh.
      expect(await store.claimIdempotencyKey({ ...live, createdAt: T0 + HOUR }, T0 + HOUR)).toMatchObject({ claimed: false, existing: { key: 'p3' } });
      expect(await store.claimIdempotencyKey({ ...doneExpired, createdAt: T0 + HOUR, expiresAt: T0 + 2 * HOUR }, T0 + HOUR)).toEqual({ claimed: true });
      await expect(Promise.resolve().then(() => store.purgeExpiredIdempotencyKeys(T0, 0))).rejects.toBeInstanceOf(ValidationError);
    });

    it('completion stores a response without a body as null', async () => {
      const record = makeIdempotency({ key: 'nobody' });
      await store.claimIdempotencyKey(record, T0);
      await store.completeIdempotencyKey(claimOf(record), { status: 204, body: null, expiresAt: T0 + 24 * HOUR, tokenIds: [] });
      expect(await store.claimIdempotencyKey(record, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done', status: 204, body: null } });
    });

    it('deleting a token withdraws, in the same transaction, the stored responses that carry it (and only those); ids naming no token are ignored', async () => {
      const [carried, other] = await createAll([makeToken(), makeToken()]);
      const withToken = makeIdempotency({ key: 'w1' });
      const withOther = makeIdempotency({ key: 'w2' });
      const withNone = makeIdempotency({ key: 'w3' });
      for (const record of [withToken, withOther, withNone]) await store.claimIdempotencyKey(record, T0);
      await store.completeIdempotencyKey(claimOf(withToken), response(200, 'a', undefined, [carried!.id, 'no-such-token']));
      await store.completeIdempotencyKey(claimOf(withOther), response(200, 'b', undefined, [other!.id]));
      await store.completeIdempotencyKey(claimOf(withNone), response(200, 'c', undefined, ['no-such-token']));
      expect(await remove(TENANT_A, carried!.id)).toBe(true);
      expect(await store.claimIdempotencyKey(withToken, T0 + 1)).toEqual({
        claimed: false,
        existing: { ...withToken, state: 'withdrawn', status: null, body: null, withdrawAt: null },
      });
      expect(await store.claimIdempotencyKey(withOther, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done', body: bytes('b') } });
      expect(await store.claimIdempotencyKey(withNone, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done', body: bytes('c') } });
      // The withdrawn record keeps its key until it expires, then the key is free.
      expect(await store.purgeExpiredIdempotencyKeys(T0 + 24 * HOUR, 10)).toBe(3);
      expect(await store.claimIdempotencyKey({ ...withToken, createdAt: T0 + 24 * HOUR }, T0 + 24 * HOUR)).toEqual({ claimed: true });
    });

    it('a token deleted before the completion leaves the record withdrawn', async () => {
      const [token] = await createAll([makeToken()]);
      const record = makeIdempotency({ key: 'w4' });
      await store.claimIdempotencyKey(record, T0);
      await remove(TENANT_A, token!.id);
      await store.completeIdempotencyKey(claimOf(record), response(201, 'data', T0 + 24 * HOUR, [token!.id]));
      expect(await store.claimIdempotencyKey(record, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'withdrawn', body: null, expiresAt: T0 + 24 * HOUR } });
    });

    it('completion sets withdrawAt to the earliest expiry or cvc purge among the tokens carried', async () => {
      const [expiring, withCvc, plain] = await createAll([makeToken({ expiresAt: T0 + 5 * HOUR }), makeToken({ cvcPurgeAt: T0 + HOUR }), makeToken()]);
      const record = makeIdempotency({ key: 'w5' });
      await store.claimIdempotencyKey(record, T0);
      await store.completeIdempotencyKey(claimOf(record), response(200, 'x', undefined, [plain!.id, expiring!.id, withCvc!.id]));
      expect(await store.claimIdempotencyKey(record, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done', withdrawAt: T0 + HOUR } });
      const none = makeIdempotency({ key: 'w6' });
      await store.claimIdempotencyKey(none, T0);
      await store.completeIdempotencyKey(claimOf(none), response(200, 'y', undefined, [plain!.id]));
      expect(await store.claimIdempotencyKey(none, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done', withdrawAt: null } });
    });

    it('purging an expired token and removing a cvc withdraw the responses that carry them', async () => {
      const [expiring, withCvc] = await createAll([makeToken({ expiresAt: T0 + HOUR }), makeToken({ cvcPurgeAt: T0 + HOUR })]);
      const a = makeIdempotency({ key: 'w7' });
      const b = makeIdempotency({ key: 'w8' });
      for (const record of [a, b]) await store.claimIdempotencyKey(record, T0);
      await store.completeIdempotencyKey(claimOf(a), response(200, 'a', undefined, [expiring!.id]));
      await store.completeIdempotencyKey(claimOf(b), response(200, 'b', undefined, [withCvc!.id]));
      expect((await store.purgeExpiredTokens(T0 + HOUR, 10)).length).toBe(1);
      expect(await store.claimIdempotencyKey(a, T0 + HOUR)).toMatchObject({ claimed: false, existing: { state: 'withdrawn', body: null } });
      // A re-encryption keeps the cvc (and the stored response); its removal withdraws it.
      const rewritten = new Uint8Array([7, 7]);
      expect(await store.replaceCiphertext(TENANT_A, withCvc!.id, withCvc!.ciphertext, { ciphertext: rewritten, keyVersion: 2, cvcPurgeAt: T0 + HOUR })).toBe(true);
      expect(await store.claimIdempotencyKey(b, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done' } });
      expect(await store.replaceCiphertext(TENANT_A, withCvc!.id, rewritten, { ciphertext: new Uint8Array([8]), keyVersion: 2, cvcPurgeAt: null })).toBe(true);
      expect(await store.claimIdempotencyKey(b, T0 + HOUR)).toMatchObject({ claimed: false, existing: { state: 'withdrawn', body: null } });
    });

    it('a token deleted concurrently with the completion never leaves its response replayable (race)', async () => {
      for (let i = 0; i < 20; i++) {
        const [token] = await createAll([makeToken()]);
        const record = makeIdempotency({ key: `race-del-${i}` });
        await store.claimIdempotencyKey(record, T0);
        await Promise.all([
          Promise.resolve().then(() => store.completeIdempotencyKey(claimOf(record), response(200, 'data', undefined, [token!.id]))),
          Promise.resolve().then(() => remove(TENANT_A, token!.id)),
        ]);
        expect(await store.claimIdempotencyKey(record, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'withdrawn', body: null } });
      }
    });

    it('exactly one of many concurrent claims wins', async () => {
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => Promise.resolve().then(() => store.claimIdempotencyKey(makeIdempotency({ key: 'race', requestHash: `h${i}` }), T0))),
      );
      expect(results.filter((r) => r.claimed)).toHaveLength(1);
    });
  });

  describe('audit log', () => {
    it('appends batches and lists oldest first with increasing seq', async () => {
      const entries = [
        makeAudit({ operation: 'token:read', resourceId: 'r1', at: T0 + 1 }),
        makeAudit({ operation: 'token:read', resourceId: 'r2', outcome: 'failure', detail: 'not_found', at: T0 + 2 }),
        makeAudit({ operation: 'reactor:invoke', resourceId: null, actor: APP_B, at: T0 + 3 }),
      ];
      await store.appendAudit(entries.slice(0, 2));
      await store.appendAudit([]);
      await store.appendAudit(entries.slice(2));
      const listed = await store.listAudit(TENANT_A, {}, cursor(10));
      expect(listed.items.map(({ seq: _seq, ...rest }) => rest)).toEqual(entries);
      const seqs = listed.items.map((e) => e.seq);
      expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
      expect(new Set(seqs).size).toBe(3);
    });

    it('appends a large batch completely and in order', async () => {
      // 75 = two full chunks of a multi-row insert and a remainder, for stores that chunk.
      const entries = Array.from({ length: 75 }, (_, i) =>
        makeAudit({ resourceId: i % 3 === 0 ? null : `r${i}`, detail: i % 2 ? 'not_found' : null, outcome: i % 2 ? 'failure' : 'success', at: T0 + i }),
      );
      await store.appendAudit(entries);
      const listed = await store.listAudit(TENANT_A, {}, { mode: 'offset', size: 100, page: 1 });
      expect(listed.items.map(({ seq: _seq, ...rest }) => rest)).toEqual(entries);
    });

    it('filters by resource, actor and operation, within the tenant', async () => {
      await store.appendAudit([makeAudit({ resourceId: 'r1', operation: 'token:read' })]);
      await store.appendAudit([makeAudit({ resourceId: 'r1', operation: 'token:update', actor: APP_B })]);
      await store.appendAudit([makeAudit({ resourceId: 'r2', operation: 'token:read', actor: APP_B })]);
      await store.appendAudit([makeAudit({ resourceId: 'r1', operation: 'token:read', tenantId: TENANT_B })]);
      const ops = async (filter: object) => (await store.listAudit(TENANT_A, filter, cursor(10))).items.map((e) => `${e.resourceId}/${e.operation}/${e.actor}`);
      expect(await ops({ resourceId: 'r1' })).toEqual([`r1/token:read/${APP_A}`, `r1/token:update/${APP_B}`]);
      expect(await ops({ actor: APP_B })).toEqual([`r1/token:update/${APP_B}`, `r2/token:read/${APP_B}`]);
      expect(await ops({ operation: 'token:read' })).toEqual([`r1/token:read/${APP_A}`, `r2/token:read/${APP_B}`]);
      expect(await ops({ resourceId: 'r1', actor: APP_B })).toEqual([`r1/token:update/${APP_B}`]);
      expect(await ops({ resourceId: 'r1', operation: 'token:read' })).toEqual([`r1/token:read/${APP_A}`]);
      expect(await ops({ actor: APP_B, operation: 'token:read' })).toEqual([`r2/token:read/${APP_B}`]);
      expect(await ops({ resourceId: 'r1', actor: APP_B, operation: 'token:update' })).toEqual([`r1/token:update/${APP_B}`]);
      const second = await store.listAudit(TENANT_A, { actor: APP_B }, offset(1, 2));
      expect(second).toMatchObject({ mode: 'offset', totalItems: 2 });
      expect(second.items.map((e) => e.resourceId)).toEqual(['r2']);
      expect(await ops({ resourceId: 'r3' })).toEqual([]);
      expect((await store.listAudit(TENANT_B, {}, cursor(10))).items.map((e) => e.resourceId)).toEqual(['r1']);
    });

    it('pages in both modes', async () => {
      for (let i = 0; i < 5; i++) await store.appendAudit([makeAudit({ resourceId: `r${i}` })]);
      const one = await store.listAudit(TENANT_A, {}, cursor(3));
      if (one.mode !== 'cursor') throw new Error('cursor mode expected');
      expect(one.items.map((e) => e.resourceId)).toEqual(['r0', 'r1', 'r2']);
      const two = await store.listAudit(TENANT_A, {}, cursor(3, one.next!));
      expect(two).toMatchObject({ mode: 'cursor', next: null });
      expect(two.items.map((e) => e.resourceId)).toEqual(['r3', 'r4']);
      const page = await store.listAudit(TENANT_A, {}, offset(2, 3));
      expect(page).toMatchObject({ mode: 'offset', totalItems: 5 });
      expect(page.items.map((e) => e.resourceId)).toEqual(['r4']);
    });
  });
}
