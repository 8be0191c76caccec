// Red team 2 (proxy keys end with their maker's credentials): ways a stolen key keeps its proxy
// alive past the regeneration meant to end it. A Caller held across the regeneration stands for
// a key an auth cache still remembers (another instance regenerated it; or a request that
// authenticated just before): makerOf records the generation the key resolved at for that
// reason, and the same must hold for confirm. (Sessions hold token permissions only, so a session
// makes, changes or confirms no proxy: session-input.ts.)
import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import type { AccessRule } from '../../src/permissions/permissions.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { startReceiver } from './receiver.js';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' };
const RULES: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];
const READ_CODE = 'module.exports = async (req) => ({ body: await req.bt.tokens.retrieve(req.args.id) })';

describeEachStore('red team 2: a proxy key outliving its maker', (store) => {
  async function setup() {
    const vault: TestVault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const handler = createFetchHandler(vault, { headerPrefix: 'BT' });
    const receiver = await startReceiver();
    receiver.answer = (request, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(request.body);
    };
    const admin = await vault.authenticate(vault.adminKey);
    const owner = await vault.caller({ type: 'private', permissions: ['token:create', 'token:read'], rules: RULES });
    const card = await vault.tokens.create(owner, { type: 'card', data: CARD });
    const anonymous = async (proxyKey: string) => {
      const response = await handler(
        new Request('http://vault/proxy', { method: 'POST', headers: { 'BT-PROXY-KEY': proxyKey, 'content-type': 'application/json' }, body: JSON.stringify({ id: card.id }) }),
      );
      return { status: response.status, text: await response.text() };
    };
    const backdoorBody = (applicationId: string) => ({
      name: 'backdoor',
      destination_url: receiver.url,
      require_auth: false,
      application: { id: applicationId },
      request_transforms: [{ type: 'code' as const, code: READ_CODE }],
    });
    return { vault, admin, card, anonymous, backdoorBody };
  }

  it('confirm by the maker with a key that was regenerated (still remembered) does not revive the proxy', async () => {
    const { vault, admin, anonymous, backdoorBody } = await setup();
    const victim = await vault.caller({ type: 'private', permissions: ['token:read', 'proxy:create', 'proxy:read', 'proxy:update'], rules: RULES });
    // The attacker's request authenticated with the stolen key (an auth cache remembers it).
    const stolen = await vault.authenticate(victim.key);
    const proxy = await vault.proxies.create(stolen, backdoorBody(victim.applicationId) as never);
    expect((await anonymous(proxy.key!)).status).toBe(200);

    await vault.applications.regenerateKey(admin, victim.applicationId);
    expect((await anonymous(proxy.key!)).status).toBe(401);
    // makerOf would record the stolen key's generation (a proxy that has ended already); confirm must not record the new one.
    await expect(vault.proxies.confirm(stolen, proxy.id)).rejects.toThrow(/regenerated or deleted since it was checked/);
    expect((await anonymous(proxy.key!)).status).toBe(401);
  });

  it('confirm by a covering caller whose own key was regenerated (still remembered) does not revive the proxy either', async () => {
    const { vault, admin, anonymous, backdoorBody } = await setup();
    const victim = await vault.caller({ type: 'private', permissions: ['token:read', 'proxy:create', 'proxy:read'], rules: RULES });
    const proxy = await vault.proxies.create(await vault.authenticate(victim.key), backdoorBody(victim.applicationId) as never);
    const covering = await vault.caller({ type: 'private', permissions: ['token:read', 'proxy:create', 'proxy:read', 'proxy:update'], rules: RULES });
    const stolen = await vault.authenticate(covering.key);
    await vault.applications.regenerateKey(admin, victim.applicationId);
    await vault.applications.regenerateKey(admin, covering.applicationId);
    await expect(vault.proxies.confirm(stolen, proxy.id)).rejects.toThrow(/regenerated or deleted since it was checked/);
    expect((await anonymous(proxy.key!)).status).toBe(401);
  });
});
