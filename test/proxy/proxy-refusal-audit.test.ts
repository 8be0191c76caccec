// Which refused keyed proxy calls leave an audit entry (docs/proxies.md, Audit), on both stores:
// an application presenting a key that opens nothing is recorded in its own tenant, naming no
// proxy; an unauthenticated call of a proxy that needs an API key is recorded in the proxy's
// tenant; refusals by the rate limits and unauthenticated unknown keys are not. No entry holds a
// presented key.
import { expect, it } from 'vitest';
import { describeEachStore } from '../support/stores.js';

describeEachStore('audit of refused keyed proxy calls', (store) => {
  it('records the refusals that name a tenant and stay bounded by the limits, never the presented key', async () => {
    const vault = await store.vault({
      proxy: {
        unsafeFetch: async () => new Response('ok', { status: 200 }),
        inboundRateLimit: { perKey: { requests: 2, windowMs: 60_000 }, perAddress: { requests: 3, windowMs: 60_000 } },
      },
    });
    const admin = await vault.authenticate(vault.adminKey);
    const app = await vault.caller({ permissions: ['proxy:invoke'] });
    const guarded = await vault.proxies.create(admin, { name: 'guarded', destination_url: 'https://api.example.com/' });
    const other = await vault.createTenant({ name: 'other' });
    const otherAdmin = await vault.authenticate(other.application.key);
    const foreign = await vault.proxies.create(otherAdmin, { name: 'theirs', destination_url: 'https://api.example.com/' });
    const entries = async (caller = admin) => (await vault.logs.list(caller, { operation: 'proxy:invoke' })).data;
    const call = (caller: typeof app | null, key: string, clientAddress = '203.0.113.1') => vault.proxy(caller, { method: 'POST', key, clientAddress, body: 'x' });

    // An application's unknown key, and another tenant's proxy key: one entry each in its own
    // tenant, with no proxy named, so it tells the tenant nothing about the other one.
    const unknownKey = 'tvp_guessed_key_0123456789abcdef';
    for (const key of [unknownKey, foreign.key!]) {
      await expect(call(app, key)).rejects.toMatchObject({
        code: 'authentication_error',
        message: 'The proxy key is not valid: send the key shown when the proxy was created, or when its key was last rotated',
      });
    }
    const mine = await entries();
    expect(mine.map((e) => [e.actor, e.resource_id, e.outcome])).toEqual([
      [app.applicationId, null, 'failure'],
      [app.applicationId, null, 'failure'],
    ]);
    expect(JSON.parse(mine[0]!.detail!)).toMatchObject({ error: 'authentication_error', proxy_id: null, authenticated: true, method: 'POST' });
    expect(await entries(otherAdmin)).toEqual([]);

    // Unauthenticated, an unknown key names no tenant: no entry; and past the address's limit, a 429.
    for (let i = 0; i < 3; i++) await expect(call(null, unknownKey, '198.51.100.9')).rejects.toMatchObject({ code: 'authentication_error' });
    await expect(call(null, unknownKey, '198.51.100.9')).rejects.toMatchObject({
      code: 'too_many_requests',
      message: expect.stringMatching(/from this address: at most 3 per 60000 ms; retry after \d+ s$/),
    });

    // Without an API key, a proxy that needs one: recorded in its tenant as the proxy, within its
    // per-proxy limit; past it, a 429 and no entry.
    for (let i = 0; i < 2; i++) {
      await expect(call(null, guarded.key!, `192.0.2.${i}`)).rejects.toMatchObject({
        code: 'authentication_error',
        message: "This proxy requires an API key as well as its proxy key: send the API key of an application of the proxy's tenant that holds proxy:invoke",
      });
    }
    await expect(call(null, guarded.key!, '192.0.2.7')).rejects.toMatchObject({ code: 'too_many_requests', message: expect.stringContaining('of this proxy') });
    const refused = (await entries()).filter((e) => e.resource_id === guarded.id);
    expect(refused.map((e) => [e.actor, e.outcome])).toEqual([
      [`proxy:${guarded.id}`, 'failure'],
      [`proxy:${guarded.id}`, 'failure'],
    ]);
    expect(JSON.parse(refused[0]!.detail!)).toMatchObject({ error: 'authentication_error', proxy_id: guarded.id, authenticated: false });

    // The same application with the right key still gets through (its calls are not rate-limited).
    expect((await call(app, guarded.key!)).status).toBe(200);
    const everything = JSON.stringify([...(await entries()), ...(await entries(otherAdmin))]);
    for (const secret of [unknownKey, guarded.key!, foreign.key!, app.key, other.application.key]) expect(everything).not.toContain(secret);
    expect((await entries()).length).toBe(5);
  });
});
