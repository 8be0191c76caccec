import { beforeEach, describe, expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { requestFingerprint } from '../../src/http/idempotency.js';
import { DEFAULT_IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_TTL_MS, fingerprintHash } from '../../src/idempotency/idempotency-service.js';
import type { Vault } from '../../src/vault.js';
import { type Harness, expectProblem, harness, read } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('HTTP idempotency', (store) => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness({}, store);
  });

  const KEY = 'SVC-IDEMPOTENCY-KEY';
  const create = (key: string, data = 'secret-value') => h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data }, headers: { [KEY]: key } });

  /** Claims a key for POST /tokens with `body` directly in the store, as a request in flight holds it. */
  async function claimInStore(key: string, body: string, heldForMs: number): Promise<void> {
    const caller = await h.vault.authenticate(h.userKey);
    const now = h.vault.clock.now();
    const record = { tenantId: caller.tenantId, applicationId: caller.applicationId, key, requestHash: fingerprintHash(requestFingerprint('POST', '/tokens', body)) };
    await h.vault.store.claimIdempotencyKey({ ...record, state: 'in_flight', status: null, body: null, createdAt: now, expiresAt: now + heldForMs }, now);
  }

  async function tokenCount(): Promise<number> {
    return (await h.call('GET', '/tokens', { key: h.userKey })).body.data.length;
  }

  describe('idempotency keys', () => {
    it('replays the first success with the same status and body, and creates nothing more', async () => {
      const first = await create('k-1');
      expect(first.status).toBe(201);
      expect(first.headers.get('svc-idempotent-replayed')).toBeNull();
      const second = await create('k-1');
      expect(second.status).toBe(201);
      expect(second.text).toBe(first.text);
      expect(second.headers.get('svc-idempotent-replayed')).toBe('true');
      expect(second.headers.get('content-type')).toBe('application/json');
      expect(await tokenCount()).toBe(1);
    });

    it('without the header, the same request runs twice', async () => {
      await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'x1' } });
      await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'x1' } });
      expect(await tokenCount()).toBe(2);
    });

    it('422 for the same key with a different body or path', async () => {
      await create('k-2', 'first-value');
      const other = await create('k-2', 'other-value');
      expect(expectProblem(other, 422).title).toBe('Unprocessable Content');
      expect(other.text).not.toContain('other-value');
      const otherPath = await h.call('POST', '/tokenize', { key: h.userKey, body: { type: 'token', data: 'first-value' }, headers: { [KEY]: 'k-2' } });
      expectProblem(otherPath, 422);
      expect(await tokenCount()).toBe(1);
    });

    it('keys are per application: another application may use the same key', async () => {
      await create('k-3');
      const otherKey = await h.key(['token:create', 'token:read']);
      const sent = await h.call('POST', '/tokens', { key: otherKey, body: { type: 'token', data: 'secret-value' }, headers: { [KEY]: 'k-3' } });
      expect(sent.status).toBe(201);
      expect(sent.headers.get('svc-idempotent-replayed')).toBeNull();
    });

    it('409 while the first request with the key is in flight; replay once it is done', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const inFlight = new Promise<void>((resolve) => (entered = resolve));
      const slow = gatedVault(h.vault, gate, entered);
      const handler = createFetchHandler(slow);
      const request = () =>
        new Request('http://vault.test/tokens', {
          method: 'POST',
          headers: { 'svc-api-key': h.userKey, 'content-type': 'application/json', [KEY]: 'k-4' },
          body: JSON.stringify({ type: 'token', data: 'slow-value' }),
        });
      const first = handler(request());
      await inFlight;
      const concurrent = await read(await handler(request()));
      expect(expectProblem(concurrent, 409).detail).toMatch(/in progress/);
      release();
      expect((await first).status).toBe(201);
      const replay = await handler(request());
      expect(replay.status).toBe(201);
      expect(replay.headers.get('svc-idempotent-replayed')).toBe('true');
    });

    it('409 for an in-flight claim made directly in the store', async () => {
      const body = JSON.stringify({ type: 'token', data: 'claimed-value' });
      await claimInStore('k-5', body, IDEMPOTENCY_TTL_MS);
      const sent = await h.call('POST', '/tokens', { key: h.userKey, body, headers: { [KEY]: 'k-5' } });
      expectProblem(sent, 409);
    });

    it('a claim left by a process that died expires with its lease: the key then runs the request', async () => {
      const body = JSON.stringify({ type: 'token', data: 'orphaned-value' });
      // As a request would have claimed it, before its process died: a lease, not a day.
      await claimInStore('k-lease', body, DEFAULT_IDEMPOTENCY_LEASE_MS);
      expectProblem(await h.call('POST', '/tokens', { key: h.userKey, body, headers: { [KEY]: 'k-lease' } }), 409);
      h.vault.clock.advance(DEFAULT_IDEMPOTENCY_LEASE_MS);
      const retried = await h.call('POST', '/tokens', { key: h.userKey, body, headers: { [KEY]: 'k-lease' } });
      expect(retried.status).toBe(201);
      // Its response is then kept for 24 hours, not for the lease.
      h.vault.clock.advance(DEFAULT_IDEMPOTENCY_LEASE_MS * 2);
      const replay = await h.call('POST', '/tokens', { key: h.userKey, body, headers: { [KEY]: 'k-lease' } });
      expect(replay.headers.get('svc-idempotent-replayed')).toBe('true');
      expect(replay.text).toBe(retried.text);
      expect(await tokenCount()).toBe(1);
    });

    it('the lease is an option, validated', async () => {
      expect(() => createFetchHandler(h.vault, { idempotencyLeaseMs: 10 })).toThrow(/idempotencyLeaseMs/);
      expect(() => createFetchHandler(h.vault, { idempotencyLeaseMs: 1.5 as number })).toThrow(/idempotencyLeaseMs/);
    });

    it('an error response releases the key, so it may be retried', async () => {
      const bad = await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'card', data: { number: '1' } }, headers: { [KEY]: 'k-6' } });
      expectProblem(bad, 400);
      const retry = await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'retry-value' }, headers: { [KEY]: 'k-6' } });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('svc-idempotent-replayed')).toBeNull();
    });

    it('records live 24 hours by the vault clock', async () => {
      await create('k-7', 'day-one');
      h.vault.clock.advance(IDEMPOTENCY_TTL_MS - 1000);
      expectProblem(await create('k-7', 'day-two'), 422);
      h.vault.clock.advance(2000);
      const later = await create('k-7', 'day-two');
      expect(later.status).toBe(201);
      expect(later.headers.get('svc-idempotent-replayed')).toBeNull();
    });

    it('covers PUT and PATCH too, and replays a 200', async () => {
      const token = (await create('k-8')).body;
      const patch = () => h.call('PATCH', `/tokens/${token.id}`, { key: h.userKey, body: { metadata: { n: '1' } }, headers: { [KEY]: 'k-9' } });
      const first = await patch();
      const second = await patch();
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(second.text).toBe(first.text);
      expect(second.headers.get('svc-idempotent-replayed')).toBe('true');

      const app = (await h.call('POST', '/applications', { key: h.adminKey, body: { name: 'a', type: 'public' } })).body;
      const put = () => h.call('PUT', `/applications/${app.id}`, { key: h.adminKey, body: { name: 'b' }, headers: { [KEY]: 'k-10' } });
      expect((await put()).status).toBe(200);
      expect((await put()).headers.get('svc-idempotent-replayed')).toBe('true');
    });

    it('400 for a key longer than 255 characters; 255 is fine', async () => {
      expectProblem(await create('x'.repeat(256)), 400);
      expect((await create('x'.repeat(255))).status).toBe(201);
    });

    it('uses the configured prefix: BT-IDEMPOTENCY-KEY and bt-idempotent-replayed', async () => {
      const bt = await harness({ headerPrefix: 'BT' }, store);
      try {
        const send = () => bt.call('POST', '/tokens', { key: bt.userKey, body: { type: 'token', data: 'bt-value' }, headers: { 'BT-IDEMPOTENCY-KEY': 'k' } });
        await send();
        const again = await send();
        expect(again.headers.get('bt-idempotent-replayed')).toBe('true');
        expect((await bt.call('GET', '/tokens', { key: bt.userKey })).body.data).toHaveLength(1);
      } finally {
        await bt.vault.close();
      }
    });
  });

  /** The vault, but token creation signals `entered`, then waits for `gate`. */
  function gatedVault(vault: Vault, gate: Promise<void>, entered: () => void): Vault {
    // defineProperty, not assignment: vault.tokens is the vault's guarded service, which takes no writes.
    const create: Vault['tokens']['create'] = async (caller, body) => {
      entered();
      await gate;
      return vault.tokens.create(caller, body);
    };
    const tokens = Object.create(vault.tokens, { create: { value: create } }) as Vault['tokens'];
    return { ...vault, tokens } as Vault;
  }
});
