import { afterEach, expect, it } from 'vitest';
import { describeEachSharedStore, type SharedStores } from '../support/stores.js';

/** A revocation made on one instance ends sessions served by another. */
describeEachSharedStore('sessions end with their applications’ keys, across instances', (database) => {
  let shared: SharedStores | undefined;
  afterEach(async () => {
    await shared?.close();
    shared = undefined;
  });

  it('a regeneration on instance a ends a session on instance b within authCacheMs; b never resolves it again', async () => {
    shared = await database.open();
    const { a, b } = shared;
    const admin = await a.authenticate(a.adminKey);
    const browser = await a.caller({ type: 'public', permissions: ['token:create'] });
    const backend = await a.caller({ permissions: ['token:create', 'token:read'] });
    const { session_key, nonce } = await a.sessions.create(await a.authenticate(browser.key));
    await a.sessions.authorize(await a.authenticate(backend.key), { nonce, permissions: ['token:read'] });
    // b resolves the session and remembers it (authCacheMs, default 1 s).
    expect((await b.authenticate(session_key)).session?.authorizedBy).toBe(backend.applicationId);
    await a.applications.regenerateKey(admin, backend.applicationId);
    await expect(a.authenticate(session_key)).rejects.toThrow(/session has ended/);
    // The documented bound: b's remembered Caller lasts at most authCacheMs; then b reads the store.
    b.clock.advance(1_000);
    await expect(b.authenticate(session_key)).rejects.toThrow(/session has ended: the keys of the application that authorized it/);
  });
});
