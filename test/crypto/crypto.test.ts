import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { LocalKeyProvider, decodeMasterKey, generateMasterKey } from '../../src/crypto/key-provider.js';
import { KeyRing, versionOf } from '../../src/crypto/key-ring.js';
import { ValidationError } from '../../src/errors/errors.js';
import { createSqliteStore } from '../../src/sqlite.js';

async function ring(masterKey = generateMasterKey()) {
  const store = createSqliteStore({ filename: ':memory:' });
  await store.migrate();
  return { store, keys: new KeyRing(store, new LocalKeyProvider(masterKey), new ManualClock()) };
}

describe('master key', () => {
  it('accepts 32 bytes or their base64, and nothing else', () => {
    expect(decodeMasterKey(new Uint8Array(32)).length).toBe(32);
    expect(decodeMasterKey(Buffer.alloc(32, 7).toString('base64')).length).toBe(32);
    expect(() => decodeMasterKey(new Uint8Array(16))).toThrow(ValidationError);
    expect(() => decodeMasterKey('c2hvcnQ=')).toThrow(/32 bytes/);
  });

  it('wrapped keys are bound to their context', () => {
    const provider = new LocalKeyProvider(generateMasterKey());
    const wrapped = provider.wrap(Buffer.alloc(32, 1), 'tenant-a');
    expect(Buffer.from(provider.unwrap(wrapped, 'tenant-a'))).toEqual(Buffer.alloc(32, 1));
    expect(() => provider.unwrap(wrapped, 'tenant-b')).toThrow(/master key does not match/);
  });

  it('another master key cannot unwrap the tenant keys', async () => {
    const { store, keys } = await ring();
    await keys.keysFor('t1');
    const other = new KeyRing(store, new LocalKeyProvider(generateMasterKey()), new ManualClock());
    await expect(Promise.resolve(other.keysFor('t1'))).rejects.toThrow(/master key does not match/);
  });
});

describe('envelope encryption', () => {
  it('round-trips and binds the ciphertext to tenant and token id', async () => {
    const { keys } = await ring();
    const k = await keys.keysFor('t1');
    const { ciphertext } = keys.encrypt(k, 't1', 'tok-1', Buffer.from('{"a":1}'));
    expect((await keys.decrypt('t1', 'tok-1', ciphertext)).toString()).toBe('{"a":1}');
    // Another token id or tenant is other additional data: GCM's tag check fails.
    await expect(keys.decrypt('t1', 'tok-2', ciphertext)).rejects.toThrow(/unable to authenticate data/);
    await keys.keysFor('t2');
    await expect(keys.decrypt('t2', 'tok-1', ciphertext)).rejects.toThrow(/unable to authenticate data/);
  });

  it('tampering with the ciphertext is detected', async () => {
    const { keys } = await ring();
    const k = await keys.keysFor('t1');
    const { ciphertext } = keys.encrypt(k, 't1', 'x', Buffer.from('secret'));
    ciphertext[ciphertext.length - 1]! ^= 1;
    await expect(keys.decrypt('t1', 'x', ciphertext)).rejects.toThrow(/unable to authenticate data/);
  });

  it('rotation makes a new version for new writes and keeps old data readable', async () => {
    const { keys } = await ring();
    const k1 = await keys.keysFor('t1');
    const old = keys.encrypt(k1, 't1', 'x', Buffer.from('old'));
    expect(old.keyVersion).toBe(1);
    expect(await keys.rotate('t1')).toBe(2);
    const k2 = await keys.keysFor('t1');
    const fresh = keys.encrypt(k2, 't1', 'y', Buffer.from('new'));
    expect(fresh.keyVersion).toBe(2);
    expect(versionOf(fresh.ciphertext)).toBe(2);
    expect((await keys.decrypt('t1', 'x', old.ciphertext)).toString()).toBe('old');
  });

  it('another instance sees a rotation when it meets the new version', async () => {
    const master = generateMasterKey();
    const { store, keys } = await ring(master);
    const other = new KeyRing(store, new LocalKeyProvider(master), new ManualClock());
    await other.keysFor('t1');
    await keys.rotate('t1');
    const k = await keys.keysFor('t1');
    const { ciphertext } = keys.encrypt(k, 't1', 'z', Buffer.from('v2'));
    expect((await other.decrypt('t1', 'z', ciphertext)).toString()).toBe('v2');
  });
});

describe('keyed hashes', () => {
  it('fingerprints and blind indexes are keyed per tenant, stable, and differ from each other', async () => {
    const { keys } = await ring();
    const a = await keys.keysFor('t1');
    const b = await keys.keysFor('t2');
    expect(keys.fingerprint(a, '4242')).toBe(keys.fingerprint(a, '4242'));
    expect(keys.fingerprint(a, '4242')).not.toBe(keys.fingerprint(b, '4242'));
    expect(keys.blindIndex(a, '4242')).not.toBe(keys.fingerprint(a, '4242'));
  });

  it('fingerprints survive data key rotation (dedupe keeps working)', async () => {
    const { keys } = await ring();
    const before = keys.fingerprint(await keys.keysFor('t1'), 'value');
    await keys.rotate('t1');
    expect(keys.fingerprint(await keys.keysFor('t1'), 'value')).toBe(before);
  });

  it('a fingerprint is not a plain hash of the value', async () => {
    const { createHash } = await import('node:crypto');
    const { keys } = await ring();
    const fp = keys.fingerprint(await keys.keysFor('t1'), '4242424242424242');
    expect(fp).not.toBe(createHash('sha256').update('4242424242424242').digest('base64url'));
  });
});

describe('KeyRing.verify (the CLI master-key check)', () => {
  it('reads only: a tenant without keys gets none, and a wrong master key answers false', async () => {
    const masterKey = generateMasterKey();
    const { store, keys } = await ring(masterKey);
    expect(await keys.verify('no-keys-yet')).toBe(true);
    expect(await store.listWrappedKeys('no-keys-yet', 'data')).toEqual([]);
    expect(await store.listWrappedKeys('no-keys-yet', 'index')).toEqual([]);
    await keys.keysFor('t1');
    expect(await keys.verify('t1')).toBe(true);
    const other = new KeyRing(store, new LocalKeyProvider(generateMasterKey()), new ManualClock());
    expect(await other.verify('t1')).toBe(false);
  });
});
