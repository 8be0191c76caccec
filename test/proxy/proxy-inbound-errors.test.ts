// A failing destination as an unauthenticated caller of a pre-configured proxy sees it (docs/proxies.md,
// Calling it): told that the proxy's destination failed, never which host it is, while a caller
// of the proxy's tenant is told the host. Both stores.
import { expect, it } from 'vitest';
import { describeEachStore } from '../support/stores.js';

describeEachStore('errors of an inbound proxy', (store) => {
  it('do not name the destination host to an unauthenticated caller', async () => {
    const vault = await store.vault({
      proxy: {
        unsafeFetch: async () => {
          throw new Error('connect ECONNREFUSED');
        },
      },
    });
    const admin = await vault.authenticate(vault.adminKey);
    const app = await vault.caller({ permissions: ['proxy:invoke'] });
    const inbound = await vault.proxies.create(admin, { name: 'intake', destination_url: 'https://payments.internal.example.com/intake', require_auth: false });

    const anonymous = vault.proxy(null, { method: 'POST', key: inbound.key!, clientAddress: '203.0.113.1', body: 'x' });
    await expect(anonymous).rejects.toMatchObject({ code: 'bad_gateway', message: "The proxy's destination could not be reached or did not answer properly" });
    const authenticated = vault.proxy(app, { method: 'POST', key: inbound.key!, body: 'x' });
    await expect(authenticated).rejects.toMatchObject({ code: 'bad_gateway', message: expect.stringContaining('payments.internal.example.com') });
  });
});
