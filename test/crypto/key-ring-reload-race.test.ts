import { afterEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { LocalKeyProvider, generateMasterKey } from '../../src/crypto/key-provider.js';
import { KeyRing } from '../../src/crypto/key-ring.js';
import type { Store } from '../../src/storage/store.js';
import { describeEachStore } from '../support/stores.js';

/** An older, slower reload must not replace a newer forced one. */
describeEachStore('key ring reload race', (kind) => {
  let opened: Store | undefined;
  afterEach(async () => {
    if (opened) {
      await opened.close();
      await kind.cleanup(opened);
      opened = undefined;
    }
  });

  it('a forced reload that read the versions before a rotation, answering after the newer one, does not put writes back on the old key', async () => {
    const store = kind.create();
    opened = store;
    await store.migrate();
    const masterKey = generateMasterKey();
    const clock = new ManualClock();
    // The gate holds the answer of one listing of data keys, already read from the store (its snapshot).
    let gate: Promise<void> | undefined;
    let release = () => {};
    let held = () => {};
    const heldAnswer = new Promise<void>((resolve) => (held = resolve));
    const gated = new Proxy(store, {
      get(target, name, receiver) {
        if (name !== 'listWrappedKeys') return Reflect.get(target, name, receiver) as unknown;
        return async (tenantId: string, purpose: 'data' | 'index') => {
          const rows = await target.listWrappedKeys(tenantId, purpose);
          const hold = purpose === 'data' ? gate : undefined;
          if (hold) {
            gate = undefined;
            held();
            await hold;
          }
          return rows;
        };
      },
    });
    const ring = new KeyRing(gated, new LocalKeyProvider(masterKey), clock, { refreshMs: 60_000 });
    // Another instance, on the same store, rotates.
    const other = new KeyRing(store, new LocalKeyProvider(masterKey), clock, { refreshMs: 60_000 });

    expect((await ring.keysFor('t1')).current).toBe(1);
    expect(await other.rotate('t1')).toBe(2);
    gate = new Promise<void>((resolve) => (release = resolve));
    // A read meets version 2: its forced reload lists versions 1 and 2, and its answer is held
    // (say, a slow KMS unwrap).
    const older = ring.keysCovering('t1', [2]);
    await heldAnswer;
    // Meanwhile this instance rotates: its own forced reload lists 1, 2 and 3 and ends first.
    expect(await ring.rotate('t1')).toBe(3);
    expect((await ring.keysFor('t1')).current).toBe(3);
    release();
    // The older reload answers its own caller with what it read...
    expect((await older).current).toBe(2);
    // ...but is not kept: writes go on with the newest key, not version 2 for up to keyRefreshMs.
    expect((await ring.keysFor('t1')).current).toBe(3);
  });
});
