import { beforeEach, describe, expect, it } from 'vitest';
import type { StoredTokenIntent, Store } from '../storage/store.js';
import { APP_A, HOUR, T0, TENANT_A, TENANT_B, hex, makeToken, tokenHelpers } from './store-fixtures.js';

let counter = 0;

/** A valid StoredTokenIntent of tenant A living one hour, with overrides. */
export function makeTokenIntent(overrides: Partial<StoredTokenIntent> = {}): StoredTokenIntent {
  const id = overrides.id ?? `intent-${++counter}`;
  return {
    tenantId: TENANT_A,
    id,
    type: 'token',
    sealed: new TextEncoder().encode(`sealed ${id}`),
    fingerprint: `fp-${id}`,
    createdBy: APP_A,
    createdAt: T0,
    expiresAt: T0 + HOUR,
    ...overrides,
  };
}

/** Registers the Store conformance tests of token intents (see runStoreConformance). */
export function tokenIntentConformance(current: () => Store): void {
  let store: Store;
  beforeEach(() => {
    store = current();
  });
  const { createAll, listIds } = tokenHelpers(() => store);
  const plainIntent = (intent: StoredTokenIntent | null) => intent && { ...intent, sealed: hex(intent.sealed) };

  describe('token intents', () => {
    it('create, get while live (not from expiresAt on), per tenant; a taken id is exists', async () => {
      const intent = makeTokenIntent({ fingerprint: null });
      expect(await store.createTokenIntent(intent)).toBe('created');
      expect(await store.createTokenIntent({ ...intent, type: 'card' })).toBe('exists');
      expect(plainIntent(await store.getTokenIntent(TENANT_A, intent.id, T0 + HOUR - 1))).toEqual(plainIntent(intent));
      expect(await store.getTokenIntent(TENANT_A, intent.id, T0 + HOUR)).toBeNull();
      expect(await store.getTokenIntent(TENANT_B, intent.id, T0)).toBeNull();
      // Another tenant may hold the same id.
      expect(await store.createTokenIntent({ ...intent, tenantId: TENANT_B })).toBe('created');
    });

    it('delete removes a live intent of the tenant only', async () => {
      const intent = makeTokenIntent();
      await store.createTokenIntent(intent);
      expect(await store.deleteTokenIntent(TENANT_B, intent.id, T0)).toBe(false);
      expect(await store.deleteTokenIntent(TENANT_A, intent.id, T0 + HOUR)).toBe(false);
      expect(await store.deleteTokenIntent(TENANT_A, intent.id, T0)).toBe(true);
      expect(await store.deleteTokenIntent(TENANT_A, intent.id, T0)).toBe(false);
      expect(await store.getTokenIntent(TENANT_A, intent.id, T0 - 1)).toBeNull();
    });

    it('convert removes the intent and creates the token; without a live intent of the tenant it writes nothing', async () => {
      const intent = makeTokenIntent();
      await store.createTokenIntent(intent);
      const elsewhere = makeToken({ tenantId: TENANT_B });
      expect(await store.convertTokenIntent(intent.id, elsewhere, T0)).toEqual({ status: 'not_found' });
      expect(await listIds({}, T0, TENANT_B)).toEqual([]);
      const late = makeToken();
      expect(await store.convertTokenIntent(intent.id, late, T0 + HOUR)).toEqual({ status: 'not_found' });
      const token = makeToken();
      expect(await store.convertTokenIntent(intent.id, token, T0)).toEqual({ status: 'created' });
      expect(await listIds()).toEqual([token.id]);
      expect(await store.getTokenIntent(TENANT_A, intent.id, T0)).toBeNull();
      expect(await store.convertTokenIntent(intent.id, makeToken(), T0)).toEqual({ status: 'not_found' });
      expect(await listIds()).toEqual([token.id]);
    });

    it('convert onto a taken token id writes nothing and keeps the intent', async () => {
      const [taken] = await createAll([makeToken()]);
      const intent = makeTokenIntent();
      await store.createTokenIntent(intent);
      expect(await store.convertTokenIntent(intent.id, makeToken({ id: taken!.id }), T0)).toEqual({ status: 'id_conflict' });
      expect(await store.getTokenIntent(TENANT_A, intent.id, T0)).not.toBeNull();
      expect(hex((await store.getToken(TENANT_A, taken!.id, T0))!.ciphertext)).toBe(hex(taken!.ciphertext));
    });

    it('a deduplicating convert finds a duplicate only within the scopes given, and then consumes the intent', async () => {
      const [existing] = await createAll([makeToken({ fingerprint: 'same', containers: ['/pci/high/'] })]);
      const first = makeTokenIntent();
      const second = makeTokenIntent();
      await store.createTokenIntent(first);
      await store.createTokenIntent(second);
      const outside = makeToken({ fingerprint: 'same', deduplicate: true, containers: ['/general/'] });
      expect(await store.convertTokenIntent(first.id, outside, T0, [{ prefix: '/general/', except: [] }])).toEqual({ status: 'created' });
      const within = makeToken({ fingerprint: 'same', deduplicate: true });
      const result = await store.convertTokenIntent(second.id, within, T0, [{ prefix: '/pci/', except: [] }]);
      expect(result.status === 'duplicate' && result.existing.id).toBe(existing!.id);
      expect(await store.getTokenIntent(TENANT_A, second.id, T0)).toBeNull();
      expect((await listIds()).sort()).toEqual([existing!.id, outside.id].sort());
    });

    it('race: concurrent conversions of one intent create exactly one token', async () => {
      const intent = makeTokenIntent();
      await store.createTokenIntent(intent);
      const tokens = Array.from({ length: 6 }, () => makeToken());
      const results = await Promise.all(tokens.map((token) => Promise.resolve().then(() => store.convertTokenIntent(intent.id, token, T0))));
      expect(results.filter((r) => r.status === 'created')).toHaveLength(1);
      expect(results.filter((r) => r.status === 'not_found')).toHaveLength(5);
      expect(await listIds()).toHaveLength(1);
    });

    it('purgeExpiredTokenIntents removes intents (any tenant) with expiresAt <= now, up to the limit', async () => {
      const a = makeTokenIntent({ expiresAt: T0 + 10 });
      const b = makeTokenIntent({ expiresAt: T0 + 20, tenantId: TENANT_B });
      const c = makeTokenIntent({ expiresAt: T0 + 15 });
      const later = makeTokenIntent({ expiresAt: T0 + 21 });
      for (const intent of [a, b, c, later]) await store.createTokenIntent(intent);
      expect(await store.purgeExpiredTokenIntents(T0 + 20, 2)).toBe(2);
      expect(await store.purgeExpiredTokenIntents(T0 + 20, 2)).toBe(1);
      expect(await store.purgeExpiredTokenIntents(T0 + 20, 2)).toBe(0);
      for (const gone of [a, c]) expect(await store.getTokenIntent(TENANT_A, gone.id, T0)).toBeNull();
      expect(await store.getTokenIntent(TENANT_B, b.id, T0)).toBeNull();
      expect(await store.getTokenIntent(TENANT_A, later.id, T0)).not.toBeNull();
    });
  });
}
