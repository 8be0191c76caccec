/**
 * A seal leaves no key in the key ring (docs/key-custody.md, "Sealing again"): every buffer that
 * held key material (the data keys of each version, the keys derived from the index key, the
 * audit MAC key among them, the index key itself, and the fresh keys handed to the provider to wrap)
 * is all zeros once the vault is sealed; and a load that was under way when the seal came hands
 * out none of the keys the seal wiped.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { DEFAULT_KEY_REFRESH_MS, KeyRing, type TenantKeys } from '../../src/crypto/key-ring.js';
import { splitMasterKey } from '../../src/crypto/key-shares.js';
import { SealableKeyProvider } from '../../src/crypto/sealable-key-provider.js';
import { SealedError } from '../../src/errors/errors.js';
import { heldStoreMethod } from '../support/held-store-method.js';
import { describeEachStore } from '../support/stores.js';

/** A split-key provider that keeps a reference to every key it was given to wrap and every key it unwrapped. */
class RecordingProvider extends SealableKeyProvider {
  readonly seen: Uint8Array[] = [];
  override wrap(key: Uint8Array, context: string): Uint8Array {
    this.seen.push(key);
    return super.wrap(key, context);
  }
  override unwrap(wrapped: Uint8Array, context: string): Uint8Array {
    const key = super.unwrap(wrapped, context);
    this.seen.push(key);
    return key;
  }
}

function buffersOf(keys: TenantKeys): Uint8Array[] {
  return [...keys.data.values(), keys.fingerprintKey, keys.searchKey, keys.auditKey];
}

const zero = (bytes: Uint8Array) => bytes.every((b) => b === 0);

async function unsealed(): Promise<{ provider: RecordingProvider; lines: string[] }> {
  const { lines, record } = await splitMasterKey(randomBytes(32), 3, 2);
  const provider = new RecordingProvider(record);
  await provider.submit(lines[0]!);
  await provider.submit(lines[1]!);
  return { provider, lines };
}

describeEachStore('a seal wipes the key ring', (testStore) => {
  it('every key the ring held or handed to the provider is zeros once sealed; a load across a seal hands out none of them', async () => {
    const store = testStore.create();
    try {
      await store.migrate();
      const { provider, lines } = await unsealed();
      const clock = new ManualClock();
      const held = heldStoreMethod(store, 'listWrappedKeys');
      const ring = new KeyRing(held.store, provider, clock);
      const first = await ring.keysFor('t1');
      await ring.rotate('t1');
      const second = await ring.keysFor('t1');
      await ring.newTenantKeys('t2');
      const reloading = await ring.keysFor('t3');
      const kept = [...buffersOf(first), ...buffersOf(second), ...buffersOf(reloading)];
      expect(second.data.size).toBe(2);
      expect(kept.every((b) => !zero(b))).toBe(true);
      expect(provider.seen.length).toBeGreaterThanOrEqual(8);

      // A reload of t3 that lists its keys before a seal and ends after an unseal.
      clock.advance(DEFAULT_KEY_REFRESH_MS);
      held.reset();
      held.holdNext();
      const across = ring.keysFor('t3');
      await held.answeredAtLeast(1);
      provider.seal();
      for (const bytes of [...kept, ...provider.seen]) expect(zero(bytes)).toBe(true);
      await provider.submit(lines[2]!);
      await provider.submit(lines[0]!);
      held.release();
      const after = await across;
      // Loaded afresh under the reopened key, not the wiped buffers of before the seal.
      expect(buffersOf(after).every((b) => !zero(b))).toBe(true);
      expect(buffersOf(after).some((b) => kept.includes(b))).toBe(false);

      // Sealed while a load is under way, and still sealed when it ends: it answers sealed.
      clock.advance(DEFAULT_KEY_REFRESH_MS);
      held.holdNext();
      const sealedLoad = ring.keysFor('t1');
      const settled = sealedLoad.catch((error: unknown) => error);
      provider.seal();
      held.release();
      expect(await settled).toBeInstanceOf(SealedError);
      for (const bytes of provider.seen) expect(zero(bytes)).toBe(true);
    } finally {
      await store.close();
      await testStore.cleanup(store);
    }
  });
});
