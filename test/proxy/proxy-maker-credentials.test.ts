// A proxy's key ends with the credentials of the application that made it
// (docs/proxies.md, When a proxy's key ends), on both stores, over HTTP: the attack as reported,
// confirmation and rotation, an administrator's proxy, the audit entries, events and list field,
// and the refusals of POST /proxies/{id}/confirm.
import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import type { AccessRule } from '../../src/permissions/permissions.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { startReceiver } from './receiver.js';
import { startReceiver as startWebhookReceiver, verify } from '../webhooks/receiver.js';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' };
const RULES: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];
const READ_CODE = 'module.exports = async (req) => ({ body: await req.bt.tokens.retrieve(req.args.body.id) })';

describeEachStore("a proxy's key ends with its maker's credentials", (store) => {
  async function setup() {
    const vault: TestVault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const handler = createFetchHandler(vault, { headerPrefix: 'BT' });
    const receiver = await startReceiver();
    // The destination answers with what it was sent: the transform's output comes back to the caller.
    receiver.answer = (request, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(request.body);
    };
    const admin = await vault.authenticate(vault.adminKey);
    const owner = await vault.caller({ type: 'private', permissions: ['token:create', 'token:read'], rules: RULES });
    const card = await vault.tokens.create(owner, { type: 'card', data: CARD });
    // The key the attacker holds for a moment: token:read and proxy:create.
    const victim = await vault.caller({ type: 'private', permissions: ['token:read', 'proxy:create', 'proxy:read'], rules: RULES });
    const api = async (method: string, path: string, key: string, body?: unknown) => {
      const response = await handler(
        new Request(`http://vault${path}`, {
          method,
          headers: { 'BT-API-KEY': key, 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      );
      return { status: response.status, body: response.status === 204 ? null : ((await response.json()) as Record<string, any>) };
    };
    // Anyone holding the proxy key, with no API key at all.
    const anonymous = async (proxyKey: string) => {
      const response = await handler(
        new Request('http://vault/proxy', { method: 'POST', headers: { 'BT-PROXY-KEY': proxyKey, 'content-type': 'application/json' }, body: JSON.stringify({ id: card.id }) }),
      );
      return { status: response.status, text: await response.text() };
    };
    const backdoor = async (key = victim.key, applicationId = victim.applicationId) => {
      const made = await api('POST', '/proxies', key, {
        name: 'backdoor',
        destination_url: receiver.url,
        require_auth: false,
        application: { id: applicationId },
        request_transforms: [{ type: 'code', code: READ_CODE }],
      });
      expect(made.status).toBe(201);
      return made.body as { id: string; key: string };
    };
    return { vault, admin, owner, card, victim, receiver, api, anonymous, backdoor };
  }

  it('the attack as reported: once the stolen key is regenerated, the proxy it made answers 401 and reaches no data, until an administrator confirms it', async () => {
    const { vault, card, victim, receiver, api, anonymous, backdoor } = await setup();
    const proxy = await backdoor();
    const before = await anonymous(proxy.key);
    expect(before.status).toBe(200);
    expect(JSON.parse(before.text)).toMatchObject({ id: card.id, data: { cvc: '123', number: CARD.number } });

    const regenerated = await api('POST', `/applications/${victim.applicationId}/regenerate`, vault.adminKey);
    expect(regenerated.status).toBe(200);
    expect((await api('GET', `/tokens/${card.id}`, victim.key)).status).toBe(401);
    const sent = receiver.received.length;
    const after = await anonymous(proxy.key);
    expect(after.status).toBe(401);
    expect(JSON.parse(after.text).proxy_error.detail).toBe(
      `This proxy's key ended when the credentials of application ${victim.applicationId} that made it changed; an administrator or a caller covering that application must confirm it (POST /proxies/${proxy.id}/confirm) or rotate its key`,
    );
    expect(after.text).not.toContain(CARD.number);
    expect(receiver.received.length).toBe(sent);

    // The list says who made it and that its key ended.
    const listed = (await api('GET', '/proxies', vault.adminKey)).body!['data'] as Record<string, unknown>[];
    expect(listed.find((p) => p['id'] === proxy.id)).toMatchObject({
      created_by: victim.applicationId,
      key_credentials: { application_id: victim.applicationId, status: 'ended' },
    });

    // An administrator confirms it: it stands on the current credentials again, until they change.
    const confirmed = await api('POST', `/proxies/${proxy.id}/confirm`, vault.adminKey);
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({ id: proxy.id, key_credentials: { application_id: victim.applicationId, status: 'current' } });
    expect(confirmed.body!['key']).toBeUndefined();
    expect((await anonymous(proxy.key)).status).toBe(200);
    // Deleting a key of the application (what ends its sessions) ends it again.
    const admin = await vault.authenticate(vault.adminKey);
    const extra = await vault.applicationKeys.create(admin, victim.applicationId);
    expect((await anonymous(proxy.key)).status).toBe(200);
    await vault.applicationKeys.delete(admin, victim.applicationId, extra.id);
    expect((await anonymous(proxy.key)).status).toBe(401);
  });

  it('rotating the key by an administrator gives a key that stands on no application; by its author, one that stands on its current credentials', async () => {
    const { vault, victim, api, anonymous, backdoor } = await setup();
    const proxy = await backdoor();
    const renewed = await api('POST', `/applications/${victim.applicationId}/regenerate`, vault.adminKey);
    const rotated = await api('POST', `/proxies/${proxy.id}/key`, vault.adminKey);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ key_credentials: null });
    expect((await anonymous(proxy.key)).status).toBe(401);
    expect((await anonymous(rotated.body!['key'])).status).toBe(200);
    await api('POST', `/applications/${victim.applicationId}/regenerate`, vault.adminKey);
    expect((await anonymous(rotated.body!['key'])).status).toBe(200);

    // An author that may change its proxy rotates it after a regeneration, with its new key: the new key stands on it.
    const author = await vault.caller({ type: 'private', permissions: ['token:read', 'proxy:create', 'proxy:update'], rules: RULES });
    const own = await api('POST', '/proxies', author.key, { name: 'own', destination_url: (await startReceiver()).url, require_auth: false });
    const renewedAuthor = await api('POST', `/applications/${author.applicationId}/regenerate`, vault.adminKey);
    expect((await anonymous(own.body!['key'])).status).toBe(401);
    expect(renewed.status).toBe(200);
    const byAuthor = await api('POST', `/proxies/${own.body!['id']}/key`, renewedAuthor.body!['key']);
    expect(byAuthor.status).toBe(200);
    expect(byAuthor.body).toMatchObject({ key_credentials: { application_id: author.applicationId, status: 'current' } });
    expect((await anonymous(byAuthor.body!['key'])).status).toBe(201);
    await api('POST', `/applications/${author.applicationId}/regenerate`, vault.adminKey);
    expect((await anonymous(byAuthor.body!['key'])).status).toBe(401);
  });

  it("an administrator's proxy bound to the application does not end with its keys; a deleted maker ends the key (confirm: 409, rotate: works)", async () => {
    const { vault, admin, victim, api, anonymous, backdoor } = await setup();
    const made = await vault.proxies.create(admin, {
      name: 'admin made',
      destination_url: (await startReceiver()).url,
      require_auth: false,
      application: { id: victim.applicationId },
      request_transforms: [{ type: 'code', code: READ_CODE }],
    });
    expect(made.key_credentials).toBeNull();
    const proxy = await backdoor();
    await api('POST', `/applications/${victim.applicationId}/regenerate`, vault.adminKey);
    expect((await anonymous(made.key!)).status).toBe(201);
    expect((await anonymous(proxy.key)).status).toBe(401);

    // The maker deleted: its proxy's key ends (confirm: 409); rotated by an administrator, it opens again
    // (and then says its bound application is gone).
    expect((await api('DELETE', `/applications/${victim.applicationId}`, vault.adminKey)).status).toBe(204);
    const gone = await anonymous(proxy.key);
    expect(gone.status).toBe(401);
    expect(JSON.parse(gone.text).proxy_error.detail).toContain(`application ${victim.applicationId} that made it was deleted`);
    expect((await api('GET', `/proxies/${proxy.id}`, vault.adminKey)).body).toMatchObject({ key_credentials: { status: 'maker_deleted' } });
    const refused = await api('POST', `/proxies/${proxy.id}/confirm`, vault.adminKey);
    expect(refused.status).toBe(409);
    expect(refused.body!['detail']).toContain('no longer exists');
    const rotated = await api('POST', `/proxies/${proxy.id}/key`, vault.adminKey);
    expect(rotated.status).toBe(200);
    const reopened = await anonymous(rotated.body!['key']);
    expect(reopened.status).toBe(409);
    expect(JSON.parse(reopened.text).proxy_error.detail).toContain("The proxy's application no longer exists");
  });

  it("an administrator's change of a proxy's destination keeps its maker: the key still ends with the maker's credentials", async () => {
    const { vault, admin, victim, receiver, api, anonymous, backdoor } = await setup();
    const proxy = await backdoor();
    const changed = await vault.proxies.patch(admin, proxy.id, { destination_url: `${receiver.url}/elsewhere` });
    expect(changed.key_credentials).toMatchObject({ application_id: victim.applicationId, status: 'current' });
    expect((await anonymous(proxy.key)).status).toBe(200);
    await api('POST', `/applications/${victim.applicationId}/regenerate`, vault.adminKey);
    expect((await anonymous(proxy.key)).status).toBe(401);
  });

  it('a caller covering the maker may confirm; bad input on POST /proxies/{id}/confirm is a clear 4xx', async () => {
    const { vault, victim, api, anonymous, backdoor } = await setup();
    const proxy = await backdoor();
    await api('POST', `/applications/${victim.applicationId}/regenerate`, vault.adminKey);
    const narrow = await vault.caller({ type: 'private', permissions: ['proxy:update'], rules: [] });
    const covering = await vault.caller({ type: 'private', permissions: ['token:read', 'proxy:create', 'proxy:read', 'proxy:update'], rules: RULES });
    const unpermitted = await vault.caller({ type: 'private', permissions: ['proxy:read'], rules: [] });

    const notCovering = await api('POST', `/proxies/${proxy.id}/confirm`, narrow.key);
    expect(notCovering.status).toBe(403);
    expect(notCovering.body!['detail']).toMatch(/every permission and access grant of the application/);
    const noPermission = await api('POST', `/proxies/${proxy.id}/confirm`, unpermitted.key);
    expect(noPermission.status).toBe(403);
    expect(noPermission.body!['detail']).toContain('proxy:update');
    const unknown = await api('POST', '/proxies/3f1b6c0e-0000-4000-8000-000000000000/confirm', vault.adminKey);
    expect(unknown.status).toBe(404);
    const other = await vault.createTenant({ name: 'other' });
    const foreign = await api('POST', `/proxies/${proxy.id}/confirm`, other.application.key);
    expect(foreign.status).toBe(404);
    expect((await anonymous(proxy.key)).status).toBe(401);

    const confirmed = await api('POST', `/proxies/${proxy.id}/confirm`, covering.key);
    expect(confirmed.status).toBe(200);
    expect((await anonymous(proxy.key)).status).toBe(200);
  });

  it('creating, changing, rotating, confirming and deleting a proxy is audited and announced', async () => {
    const { vault, admin, victim, api, backdoor } = await setup();
    const hooks = await startWebhookReceiver();
    try {
      await vault.webhooks.create(admin, { name: 'proxies', url: hooks.url, events: ['proxy.created', 'proxy.updated', 'proxy.deleted', 'proxy.key_rotated', 'proxy.confirmed'] });
      const proxy = await backdoor();
      await api('POST', `/applications/${victim.applicationId}/regenerate`, vault.adminKey);
      expect((await api('PATCH', `/proxies/${proxy.id}`, vault.adminKey, { name: 'renamed' })).status).toBe(200);
      expect((await api('POST', `/proxies/${proxy.id}/confirm`, vault.adminKey)).status).toBe(200);
      expect((await api('POST', `/proxies/${proxy.id}/key`, vault.adminKey)).status).toBe(200);
      expect((await api('DELETE', `/proxies/${proxy.id}`, vault.adminKey)).status).toBe(204);

      const entries = [];
      for (const operation of ['proxy:create', 'proxy:update', 'proxy:confirm', 'proxy:rotate_key', 'proxy:delete']) {
        entries.push(...(await vault.logs.list(admin, { operation })).data.filter((e) => e.resource_id === proxy.id));
      }
      expect(entries.map((e) => [e.operation, e.actor, e.outcome])).toEqual(
        expect.arrayContaining([
          ['proxy:create', victim.applicationId, 'success'],
          ['proxy:update', admin.applicationId, 'success'],
          ['proxy:confirm', admin.applicationId, 'success'],
          ['proxy:rotate_key', admin.applicationId, 'success'],
          ['proxy:delete', admin.applicationId, 'success'],
        ]),
      );
      await vault.worker.runDue();
      const { secret } = await vault.webhooks.secret(admin);
      const payloads = hooks.received.map((r) => verify(r, secret, vault.clock));
      expect(payloads.map((p) => p.type).sort()).toEqual(['proxy.confirmed', 'proxy.created', 'proxy.deleted', 'proxy.key_rotated', 'proxy.updated']);
      expect(payloads.find((p) => p.type === 'proxy.created').data).toEqual({ proxy_id: proxy.id, maker_application_id: victim.applicationId, actor: victim.applicationId });
      expect(payloads.find((p) => p.type === 'proxy.key_rotated').data).toEqual({ proxy_id: proxy.id, maker_application_id: null, actor: admin.applicationId });
      for (const p of payloads) expect(JSON.stringify(p)).not.toContain(proxy.key);
    } finally {
      await hooks.close();
    }
  });

  // A Caller held across a regeneration stands for a key an auth cache still remembers (another
  // instance regenerated it, or a request authenticated just before): makerOf records the
  // generation the key resolved at for that reason, and confirm must hold to the same.
  it('confirm by the maker with a key that was regenerated (still remembered) does not revive the proxy', async () => {
    const { vault, admin, anonymous, backdoor } = await setup();
    const victim = await vault.caller({ type: 'private', permissions: ['token:read', 'proxy:create', 'proxy:read', 'proxy:update'], rules: RULES });
    // The attacker's request authenticated with the stolen key (an auth cache remembers it).
    const stolen = await vault.authenticate(victim.key);
    const proxy = await backdoor(victim.key, victim.applicationId);
    expect((await anonymous(proxy.key)).status).toBe(200);

    await vault.applications.regenerateKey(admin, victim.applicationId);
    expect((await anonymous(proxy.key)).status).toBe(401);
    await expect(vault.proxies.confirm(stolen, proxy.id)).rejects.toThrow(/regenerated or deleted since it was checked/);
    expect((await anonymous(proxy.key)).status).toBe(401);
  });

  it('confirm by a covering caller whose own key was regenerated (still remembered) does not revive the proxy either', async () => {
    const { vault, admin, victim, anonymous, backdoor } = await setup();
    const proxy = await backdoor();
    const covering = await vault.caller({ type: 'private', permissions: ['token:read', 'proxy:create', 'proxy:read', 'proxy:update'], rules: RULES });
    const stolen = await vault.authenticate(covering.key);
    await vault.applications.regenerateKey(admin, victim.applicationId);
    await vault.applications.regenerateKey(admin, covering.applicationId);
    await expect(vault.proxies.confirm(stolen, proxy.id)).rejects.toThrow(/regenerated or deleted since it was checked/);
    expect((await anonymous(proxy.key)).status).toBe(401);
  });
});
