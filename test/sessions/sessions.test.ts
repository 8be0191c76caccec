import { expect, it } from 'vitest';
import { AuthenticationError, AuthorizationError } from '../../src/errors/errors.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('sessions in-process', (store) => {
  it('the session Caller flows through the services unchanged: created_by is the session, grants are the session’s', async () => {
    const vault = await store.vault();
    const browser = await vault.caller({ type: 'public', permissions: ['token:create'] });
    const backend = await vault.caller({ permissions: ['token:create', 'token:read', 'token:update'] });
    const { session_key, nonce } = await vault.sessions.create(browser);
    await expect(vault.authenticate(session_key)).rejects.toThrow(AuthenticationError);
    await vault.sessions.authorize(backend, { nonce, permissions: ['token:create', 'token:read'] });
    const caller = await vault.authenticate(session_key);
    expect(caller.session).toMatchObject({ createdBy: browser.applicationId, authorizedBy: backend.applicationId });
    expect([...caller.permissions].sort()).toEqual(['token:create', 'token:read']);
    const token = await vault.tokens.create(caller, { type: 'token', data: 'made by a session' });
    expect(token.created_by).toBe(caller.applicationId);
    expect((await vault.tokens.get(caller, token.id)).id).toBe(token.id);
    await expect(vault.tokens.update(caller, token.id, { metadata: { a: 'b' } })).rejects.toThrow(AuthorizationError);
    await expect(vault.applicationKeys.list(caller, browser.applicationId)).rejects.toThrow(AuthorizationError);
    await expect(vault.sessions.create(caller)).rejects.toThrow(AuthorizationError);
  });

  it('a session created or authorized by a Caller resolved from a key since revoked (as an auth cache may still hold it) ends at once', async () => {
    const vault = await store.vault();
    const admin = await vault.authenticate(vault.adminKey);
    const browserApp = await vault.caller({ type: 'public', permissions: ['token:create'] });
    const backendApp = await vault.caller({ permissions: ['token:create', 'token:read'] });
    // Resolved from their keys, as another instance's auth cache would remember them.
    const browser = await vault.authenticate(browserApp.key);
    const backend = await vault.authenticate(backendApp.key);
    await vault.applications.regenerateKey(admin, backend.applicationId);
    const authorizedByStale = await vault.sessions.create(browser);
    await vault.sessions.authorize(backend, { nonce: authorizedByStale.nonce, permissions: ['token:read'] });
    await expect(vault.authenticate(authorizedByStale.session_key)).rejects.toThrow(/ended: the keys of the application that authorized it/);
    await vault.applications.regenerateKey(admin, browser.applicationId);
    const createdByStale = await vault.sessions.create(browser);
    const freshBackend = await vault.authenticate((await vault.applicationKeys.create(admin, backend.applicationId)).key);
    await vault.sessions.authorize(freshBackend, { nonce: createdByStale.nonce, permissions: ['token:read'] });
    await expect(vault.authenticate(createdByStale.session_key)).rejects.toThrow(/ended: the keys of the application that created it/);
    // A Caller built in process (no key behind it) records the generation stored now.
    const inProcess = await vault.sessions.create(browserApp);
    await vault.sessions.authorize(freshBackend, { nonce: inProcess.nonce, permissions: ['token:read'] });
    expect((await vault.authenticate(inProcess.session_key)).session?.createdBy).toBe(browserApp.applicationId);
  });

  it('applicationKeys in-process: create, list, get, delete', async () => {
    const vault = await store.vault();
    const admin = await vault.authenticate(vault.adminKey);
    const app = await vault.caller({ permissions: ['token:read'] });
    const key = await vault.applicationKeys.create(admin, app.applicationId);
    expect((await vault.authenticate(key.key)).applicationId).toBe(app.applicationId);
    expect((await vault.applicationKeys.list(admin, app.applicationId)).map((k) => k.id)).toContain(key.id);
    expect(await vault.applicationKeys.get(admin, app.applicationId, key.id)).not.toHaveProperty('key');
    await vault.applicationKeys.delete(admin, app.applicationId, key.id);
    await expect(vault.authenticate(key.key)).rejects.toThrow(AuthenticationError);
    expect((await vault.authenticate(app.key)).applicationId).toBe(app.applicationId);
  });
});
