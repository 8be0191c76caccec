import { beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError, ValidationError } from '../../src/errors/errors.js';
import type { TestVault } from '../../src/testing/index.js';
import { CARD, setup } from '../support/tokens.js';
import { describeEachStore } from '../support/stores.js';

type Caller = Awaited<ReturnType<TestVault['caller']>>;
describeEachStore('token lifecycle', (store) => {
  let vault: TestVault;
  let revealer: Caller;

  const HOUR = 60 * 60 * 1000;

  beforeEach(async () => {
    ({ vault, revealer } = await setup(store));
  });

  describe('expiration', () => {
    it('accepts every documented format and answers in ISO 8601 with an offset', async () => {
      const cases: [string, string][] = [
        ['2030-06-01T12:00:00Z', '2030-06-01T12:00:00.000+00:00'],
        ['2030-06-01T12:00:00+02:00', '2030-06-01T10:00:00.000+00:00'],
        ['6/1/2030 3:04:05 PM -05:00', '2030-06-01T20:04:05.000+00:00'],
        ['6/1/2030 3:04:05 AM', '2030-06-01T03:04:05.000+00:00'],
        ['6/1/2030', '2030-06-01T00:00:00.000+00:00'],
      ];
      for (const [input, expected] of cases) {
        const token = await vault.tokens.create(revealer, { type: 'token', data: input, expires_at: input });
        expect(token.expires_at, input).toBe(expected);
        expect((await vault.tokens.get(revealer, token.id)).expires_at).toBe(expected);
      }
    });

    it('rejects a past or unparseable time', async () => {
      await expect(vault.tokens.create(revealer, { type: 'token', data: 'x', expires_at: '12/31/2029' })).rejects.toThrow(ValidationError);
      await expect(vault.tokens.create(revealer, { type: 'token', data: 'x', expires_at: 'tomorrow' })).rejects.toThrow(ValidationError);
      await expect(vault.tokens.create(revealer, { type: 'token', data: 'x', expires_at: '13/1/2030' })).rejects.toThrow(ValidationError);
    });

    it('is not found from the moment it expires, and physically removed by the sweep', async () => {
      const token = await vault.tokens.create(revealer, { type: 'token', data: 'short-lived', expires_at: '2030-01-01T00:10:00Z' });
      vault.clock.advance(10 * 60 * 1000 - 1);
      expect((await vault.tokens.get(revealer, token.id)).data).toBe('short-lived');
      vault.clock.advance(1);
      await expect(vault.tokens.get(revealer, token.id)).rejects.toThrow(NotFoundError);
      expect((await vault.tokens.list(revealer)).data).toEqual([]);
      await expect(vault.tokens.update(revealer, token.id, { metadata: { a: 'b' } })).rejects.toThrow(NotFoundError);
      expect(await vault.sweep()).toEqual({
        expired: 1,
        cvcRemoved: 0,
        cvcUnreadable: 0,
        idempotencyKeysRemoved: 0,
        reactorResultsRemoved: 0,
        sessionsRemoved: 0,
        tokenIntentsRemoved: 0,
        deliveriesRemoved: 0,
        auditEntriesRemoved: 0,
      });
      const reference = await vault.store.getDeletedToken(vault.tenantId, token.id);
      expect(reference?.deletedBy).toBe('system:expiry');
      // The id is still not reusable.
      await expect(vault.tokens.create(revealer, { id: token.id, type: 'token', data: 'y' })).rejects.toThrow(/already exists/);
    });

    it('an update can clear or move the expiry', async () => {
      const token = await vault.tokens.create(revealer, { type: 'token', data: 'x', expires_at: '2030-01-02T00:00:00Z' });
      const cleared = await vault.tokens.update(revealer, token.id, { expires_at: null });
      expect(cleared).not.toHaveProperty('expires_at');
      vault.clock.advance(48 * HOUR);
      expect((await vault.tokens.get(revealer, token.id)).data).toBe('x');
    });
  });

  describe('card cvc', () => {
    it('is returned within the first hour, never after, and removed from storage by the sweep', async () => {
      const token = await vault.tokens.create(revealer, { type: 'card', data: CARD });
      vault.clock.advance(HOUR - 1);
      expect((await vault.tokens.get(revealer, token.id)).data).toEqual(CARD);
      vault.clock.advance(1);
      const { cvc: _cvc, ...withoutCvc } = CARD;
      expect((await vault.tokens.get(revealer, token.id)).data).toEqual(withoutCvc);
      const before = await vault.store.getToken(vault.tenantId, token.id, vault.clock.now());
      expect(await vault.sweep()).toEqual({
        expired: 0,
        cvcRemoved: 1,
        cvcUnreadable: 0,
        idempotencyKeysRemoved: 0,
        reactorResultsRemoved: 0,
        sessionsRemoved: 0,
        tokenIntentsRemoved: 0,
        deliveriesRemoved: 0,
        auditEntriesRemoved: 0,
      });
      const after = await vault.store.getToken(vault.tenantId, token.id, vault.clock.now());
      expect(after!.cvcPurgeAt).toBeNull();
      expect(Buffer.from(after!.ciphertext).equals(Buffer.from(before!.ciphertext))).toBe(false);
      expect((await vault.tokens.get(revealer, token.id)).data).toEqual(withoutCvc);
      expect(await vault.sweep()).toEqual({
        expired: 0,
        cvcRemoved: 0,
        cvcUnreadable: 0,
        idempotencyKeysRemoved: 0,
        reactorResultsRemoved: 0,
        sessionsRemoved: 0,
        tokenIntentsRemoved: 0,
        deliveriesRemoved: 0,
        auditEntriesRemoved: 0,
      });
    });

    it('a cvc written by an update lives one hour from that update', async () => {
      const { cvc: _cvc, ...noCvc } = CARD;
      const token = await vault.tokens.create(revealer, { type: 'card', data: noCvc });
      vault.clock.advance(2 * HOUR);
      await vault.tokens.update(revealer, token.id, { data: { cvc: '456' } });
      expect((await vault.tokens.get(revealer, token.id)).data).toEqual({ ...noCvc, cvc: '456' });
      vault.clock.advance(HOUR);
      expect((await vault.tokens.get(revealer, token.id)).data).toEqual(noCvc);
    });
  });

  describe('audit log', () => {
    it('records every token operation with actor, operation, id and outcome, never data', async () => {
      const token = await vault.tokens.create(revealer, { type: 'card', data: CARD });
      await vault.tokens.get(revealer, token.id);
      await vault.tokens.update(revealer, token.id, { metadata: { a: 'b' } });
      await expect(vault.tokens.get(revealer, 'missing')).rejects.toBeInstanceOf(NotFoundError);
      await expect(vault.tokens.create(revealer, { type: 'card', data: { number: CARD.number, cvc: '1' } })).rejects.toBeInstanceOf(ValidationError);
      const again = await vault.tokens.create(revealer, { type: 'card', data: { number: CARD.number }, deduplicate_token: true });
      await vault.tokens.delete(revealer, token.id);
      const admin = await vault.authenticate(vault.adminKey);
      const logs = await vault.logs.list(admin, { size: 100 });
      const rows = logs.data.filter((e) => e.actor === revealer.applicationId).map((e) => [e.operation, e.resource_id, e.outcome, e.detail]);
      expect(rows).toEqual(
        expect.arrayContaining([
          ['token:create', token.id, 'success', null],
          ['token:read', token.id, 'success', null],
          ['token:update', token.id, 'success', null],
          ['token:read', 'missing', 'failure', 'not_found'],
          ['token:create', null, 'failure', 'validation_error'],
          ['token:create', again.id, 'success', 'deduplicated'],
          ['token:delete', token.id, 'success', null],
        ]),
      );
      expect(JSON.stringify(logs)).not.toContain(CARD.number);
      expect(logs.data.every((e) => e.at.endsWith('+00:00'))).toBe(true);
    });

    it('requires log:read', async () => {
      await expect(vault.logs.list(revealer)).rejects.toThrow(/log:read/);
    });
  });

  describe('key rotation', () => {
    it('re-encrypts old rows to the newest key with progress, and data stays the same', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) ids.push((await vault.tokens.create(revealer, { type: 'token', data: `value-${i}` })).id);
      expect(await vault.operator.keys.rotate(vault.tenantId)).toBe(2);
      const fresh = await vault.tokens.create(revealer, { type: 'token', data: 'fresh' });
      expect((await vault.store.getToken(vault.tenantId, fresh.id, vault.clock.now()))!.keyVersion).toBe(2);
      const progress: number[] = [];
      const moved = await vault.operator.keys.reencrypt(vault.tenantId, { batchSize: 3, onProgress: (p) => progress.push(p.done) });
      expect(moved).toBe(7);
      expect(progress).toEqual([3, 6, 7]);
      expect(await vault.store.countTokensBelowKeyVersion(vault.tenantId, 2)).toBe(0);
      for (let i = 0; i < 7; i++) expect((await vault.tokens.get(revealer, ids[i]!)).data).toBe(`value-${i}`);
    });
  });

  describe('idempotency record retention', () => {
    it('the sweep removes idempotency records once they expire, and only then', async () => {
      const now = vault.clock.now();
      const base = { tenantId: vault.tenantId, applicationId: 'app', requestHash: 'h', state: 'in_flight' as const, status: null, body: null, createdAt: now };
      await vault.store.claimIdempotencyKey({ ...base, key: 'stored-response', expiresAt: now + 24 * HOUR }, now);
      await vault.store.claimIdempotencyKey({ ...base, key: 'abandoned-claim', expiresAt: now + 5 * 60 * 1000 }, now);
      expect((await vault.sweep()).idempotencyKeysRemoved).toBe(0);
      vault.clock.advance(5 * 60 * 1000);
      expect((await vault.sweep()).idempotencyKeysRemoved).toBe(1);
      vault.clock.advance(24 * HOUR);
      expect((await vault.sweep()).idempotencyKeysRemoved).toBe(1);
    });
  });
});
