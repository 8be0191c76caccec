import { expect, it } from 'vitest';
import { ConflictError, NotFoundError, UnprocessableError, ValidationError } from '../../src/errors/errors.js';
import type { TokenView } from '../../src/tokens/token-view.js';
import { describeEachStore } from '../support/stores.js';
import { ALL_TOKEN_PERMISSIONS, REVEAL_ALL } from '../support/tokens.js';

/** Idempotency is a core service: in-process callers get what the HTTP header gives. */
describeEachStore('vault.idempotency', (store) => {
  async function setup() {
    const vault = await store.vault();
    const app = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL });
    const input = { type: 'token', data: 'order-42-secret' };
    const create = (key: string, fingerprint = 'create order 42') => vault.idempotency.run(app, { key, fingerprint }, () => vault.tokens.create(app, input));
    const count = async () => (await vault.tokens.list(app, {})).data.length;
    return { vault, app, create, count };
  }

  it('runs once per key: a second call replays the first result and creates nothing', async () => {
    const { create, count } = await setup();
    const first = await create('k1');
    expect(first.replayed).toBe(false);
    const second = await create('k1');
    expect(second).toEqual({ result: first.result, replayed: true });
    expect(await count()).toBe(1);
  });

  it('the same key with another fingerprint is a 422 and runs nothing', async () => {
    const { create, count } = await setup();
    await create('k1');
    await expect(create('k1', 'create order 43')).rejects.toBeInstanceOf(UnprocessableError);
    expect(await count()).toBe(1);
  });

  it('keys are per application', async () => {
    const { vault, create, count } = await setup();
    await create('shared');
    const other = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL, name: 'other' });
    const theirs = await vault.idempotency.run(other, { key: 'shared', fingerprint: 'create order 42' }, () => vault.tokens.create(other, { type: 'token', data: 'x' }));
    expect(theirs.replayed).toBe(false);
    expect(await count()).toBe(2);
  });

  it('a run that throws releases the key: the retry runs', async () => {
    const { vault, app, create } = await setup();
    await expect(vault.idempotency.run(app, { key: 'k2', fingerprint: 'create order 42' }, () => vault.tokens.create(app, { type: 'nonsense', data: 1 }))).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect((await create('k2')).replayed).toBe(false);
  });

  it('a key in flight answers 409 until the first run ends, then replays', async () => {
    const { vault, app, create } = await setup();
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    const slow = vault.idempotency.run(app, { key: 'k3', fingerprint: 'create order 42' }, async () => {
      await gate;
      return vault.tokens.create(app, { type: 'token', data: 'order-42-secret' });
    });
    await expect.poll(async () => create('k3').catch((error: unknown) => error)).toBeInstanceOf(ConflictError);
    finish();
    const first = await slow;
    expect(await create('k3')).toEqual({ result: first.result, replayed: true });
  });

  it('by default a result is withdrawn with the tokens it names: deleting the token makes the key a 409, not a replay of its data', async () => {
    const { vault, app, create } = await setup();
    const { result } = await create('k4');
    await vault.tokens.delete(app, (result as TokenView).id);
    await expect(create('k4')).rejects.toThrow(/withdrawn/);
  });

  it('refuses a bad key, fingerprint or lease before claiming anything', async () => {
    const { vault, app, count } = await setup();
    const run = () => vault.tokens.create(app, { type: 'token', data: 'x' });
    await expect(vault.idempotency.run(app, { key: '', fingerprint: 'f' }, run)).rejects.toThrow(/key: must be 1 to 255 characters/);
    await expect(vault.idempotency.run(app, { key: 'k'.repeat(256), fingerprint: 'f' }, run)).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.idempotency.run(app, { key: 'a\u0000b', fingerprint: 'f' }, run)).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.idempotency.run(app, { key: 'k', fingerprint: 42 as unknown as string }, run)).rejects.toThrow(/fingerprint/);
    await expect(vault.idempotency.run(app, { key: 'k', fingerprint: 'f', leaseMs: 10 }, run)).rejects.toThrow(/leaseMs/);
    expect(await count()).toBe(0);
    // None of them claimed the key.
    expect((await vault.idempotency.run(app, { key: 'k', fingerprint: 'f' }, run)).replayed).toBe(false);
  });

  it('a caller whose grants shrank since the run gets a 409, not the stored (revealing) result; the run is not repeated', async () => {
    const { vault, app, create, count } = await setup();
    const first = await create('k5');
    expect((first.result as TokenView).data).toBe('order-42-secret');
    // The application's reveal rule becomes a mask rule.
    const admin = await vault.caller({ permissions: ['application:create', 'application:read', 'application:update'], name: 'admin' });
    const current = await vault.applications.get(admin, app.applicationId);
    const masked = REVEAL_ALL.map((rule) => ({ ...rule, transform: 'mask' as const }));
    await vault.applications.update(admin, app.applicationId, { name: current.name, permissions: ALL_TOKEN_PERMISSIONS, rules: masked });
    const now = await vault.authenticate(app.key);
    const replay = vault.idempotency.run(now, { key: 'k5', fingerprint: 'create order 42' }, () => vault.tokens.create(now, { type: 'token', data: 'order-42-secret' }));
    await expect(replay).rejects.toThrow(/permissions or access rules changed/);
    await expect(replay).rejects.toBeInstanceOf(ConflictError);
    expect(await count()).toBe(1);
  });

  it('the same grants in another order or with other rule descriptions still replay', async () => {
    const { vault, app, create } = await setup();
    const first = await create('k6');
    const admin = await vault.caller({ permissions: ['application:create', 'application:read', 'application:update'], name: 'admin' });
    const current = await vault.applications.get(admin, app.applicationId);
    const described = REVEAL_ALL.map((rule) => ({ ...rule, description: 'same grant, new words', permissions: [...rule.permissions].reverse() }));
    await vault.applications.update(admin, app.applicationId, { name: current.name, permissions: [...ALL_TOKEN_PERMISSIONS].reverse(), rules: described });
    const now = await vault.authenticate(app.key);
    expect(await vault.idempotency.run(now, { key: 'k6', fingerprint: 'create order 42' }, () => vault.tokens.create(now, { type: 'token', data: 'x' }))).toEqual({
      result: first.result,
      replayed: true,
    });
  });

  it('a token the result carries, changed in any way since (containers, mask, data, metadata), makes the key a 409; an untouched one replays', async () => {
    const { vault, app, create } = await setup();
    const changes = [{ containers: ['/restricted/'] }, { mask: '{{ data | reveal_last: 4 }}' }, { data: 'order-42-new-secret' }, { metadata: { note: 'shipped' } }];
    for (const [i, change] of changes.entries()) {
      const first = await create(`changed-${i}`, `order ${i}`);
      await vault.tokens.update(app, (first.result as TokenView).id, change);
      await expect(create(`changed-${i}`, `order ${i}`)).rejects.toThrow(/A token the response for this idempotency key carried was changed, deleted or expired since/);
    }
    const kept = await create('untouched', 'order 9');
    expect(await create('untouched', 'order 9')).toEqual({ result: kept.result, replayed: true });
  });

  it("a token the caller holds no grant on is not followed, even when its id is in the result (the caller's own metadata): its changes do not show in the caller's replays", async () => {
    const { vault } = await setup();
    const mine = ['token:create', 'token:read'] as const;
    const app = await vault.caller({ permissions: [...mine], rules: [{ priority: 0, container: '/mine/', transform: 'reveal', permissions: [...mine] }], name: 'watcher' });
    const owner = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL, name: 'owner' });
    const hidden = await vault.tokens.create(owner, { type: 'token', data: 'not for app', containers: ['/hidden/'] });
    await expect(vault.tokens.get(app, hidden.id)).rejects.toBeInstanceOf(NotFoundError);
    const probe = () =>
      vault.idempotency.run(app, { key: 'probe', fingerprint: 'p' }, () =>
        vault.tokens.create(app, { type: 'token', data: 'mine', containers: ['/mine/'], metadata: { id: hidden.id } }),
      );
    const first = await probe();
    await vault.tokens.update(owner, hidden.id, { data: 'changed' });
    await vault.tokens.delete(owner, hidden.id);
    expect(await probe()).toEqual({ result: first.result, replayed: true });
  });

  it("a public application's key cannot use idempotency keys (every browser shares it); its sessions can", async () => {
    const { vault } = await setup();
    const browser = await vault.caller({ permissions: ['token:create'], type: 'public', name: 'browser' });
    await expect(vault.idempotency.run(browser, { key: 'order-1', fingerprint: 'f' }, () => vault.tokens.create(browser, { type: 'token', data: 'x' }))).rejects.toThrow(
      /public application's key/,
    );
    expect((await vault.tokens.list(await vault.caller({ permissions: ['token:read'], name: 'reader' }), {})).data).toEqual([]);
  });
});
