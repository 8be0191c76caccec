// bt.proxies.* of the real Basis Theory JS SDK against the real server, on both stores
// (docs/proxies.md, Pre-configured proxies): create (key shown once), retrieve, list, update,
// patch, delete, key rotation; configuration values never shown again nor stored in clear; the
// binding rules of docs/authority.md; and the refusals, each in our own words, changing nothing.
import { expect, it } from 'vitest';
import type { AccessRule } from '../../src/permissions/permissions.js';
import { describeEachStore } from '../support/stores.js';
import { sdkFailure, startSdkServer } from './harness.js';

const SECRET = 'sk_live_proxy_configuration_secret';
const RULES: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:use'] }];
const CODE = 'module.exports = async (req) => ({ headers: req.args.headers, body: req.args.body })';

describeEachStore('Basis Theory SDK: bt.proxies', (store) => {
  it('creates, retrieves, lists, updates, patches and deletes; the key is shown once and configuration values never', async () => {
    const server = await startSdkServer(store);
    const bt = await server.sdk(server.adminKey);
    const app = await server.vault.caller({ type: 'private', permissions: ['token:create', 'token:use'], rules: RULES });
    const created = await bt.proxies.create({
      name: 'Charges',
      destinationUrl: 'https://api.example.com/v1/',
      requestTransform: { code: CODE },
      configuration: { API_KEY: SECRET },
      application: { id: app.applicationId },
      requireAuth: false,
    });
    expect(created.key).toMatch(/^tvp_/);
    // The SDK's Proxy reads the bound application as applicationId (application_id on the wire).
    expect(created.applicationId).toBe(app.applicationId);
    expect(created).toMatchObject({ name: 'Charges', destinationUrl: 'https://api.example.com/v1/', requireAuth: false, configuration: { API_KEY: '********' } });
    expect((created as unknown as { requestTransforms: unknown[] }).requestTransforms).toEqual([{ type: 'code', code: CODE, options: { runtime: { image: 'node-bt' } } }]);

    const got = await bt.proxies.retrieve(created.id);
    expect(got.key).toBeUndefined();
    expect(JSON.stringify(got)).not.toContain(SECRET);
    expect((got as unknown as { application: unknown }).application).toEqual({ id: app.applicationId });
    expect(got.applicationId).toBe(app.applicationId);
    const list = await bt.proxies.list();
    expect(list.data.map((p) => [p.id, p.applicationId])).toEqual([[created.id, app.applicationId]]);
    // A reader that may not bind to the application is not told which one it is, in either shape.
    const reader = await server.sdk(await server.key({ type: 'management', permissions: ['proxy:read'] }));
    const withheld = await reader.proxies.retrieve(created.id);
    expect([(withheld as unknown as { application: unknown }).application, withheld.applicationId]).toEqual([{ redacted: true }, undefined]);
    expect((await reader.proxies.list()).data.map((p) => p.applicationId)).toEqual([undefined]);
    expect(JSON.stringify(list)).not.toContain(SECRET);

    const patched = await bt.proxies.patch(created.id, { name: 'Charges v2', configuration: { OTHER: 'x' } });
    expect(patched).toMatchObject({ name: 'Charges v2' });
    const afterPatch = await bt.proxies.retrieve(created.id);
    expect(afterPatch).toMatchObject({ name: 'Charges v2', configuration: { API_KEY: '********', OTHER: '********' }, requireAuth: false });
    const updated = await bt.proxies.update(created.id, { name: 'Replaced', destinationUrl: 'https://api.example.com/v2' });
    expect(updated).toMatchObject({ name: 'Replaced', destinationUrl: 'https://api.example.com/v2', requireAuth: true, configuration: null });
    expect((updated as unknown as { application: unknown }).application).toBeNull();
    expect(updated.applicationId).toBeUndefined();

    const rotated = await server.raw('POST', `/proxies/${created.id}/key`, { key: server.adminKey });
    expect(rotated.status).toBe(200);
    expect(rotated.body.key).toMatch(/^tvp_/);
    expect(rotated.body.key).not.toBe(created.key);

    await bt.proxies.delete(created.id);
    expect((await sdkFailure(bt.proxies.retrieve(created.id))).status).toBe(404);
  });

  it('refuses, in its own words, what the rules do not allow, and changes nothing', async () => {
    const server = await startSdkServer(store);
    const admin = await server.sdk(server.adminKey);
    const wide = await server.vault.caller({ type: 'private', permissions: ['token:create', 'token:use'], rules: RULES });
    const manager = await server.sdk(await server.key({ type: 'management', permissions: ['proxy:create', 'proxy:read', 'proxy:update', 'proxy:delete'] }));
    const reader = await server.sdk(await server.key({ type: 'management', permissions: ['proxy:read'] }));
    const own = await admin.proxies.create({ name: 'p', destinationUrl: 'https://api.example.com', configuration: { K: SECRET } });

    const cases: [string, () => Promise<unknown>, number, string][] = [
      ['no permission', () => reader.proxies.create({ name: 'x', destinationUrl: 'https://api.example.com' }), 403, 'proxy:create'],
      ['http destination', () => admin.proxies.create({ name: 'x', destinationUrl: 'http://api.example.com' }), 400, 'destination_url'],
      ['IP literal', () => admin.proxies.create({ name: 'x', destinationUrl: 'https://169.254.169.254/' }), 400, 'DNS name'],
      ['bad port', () => admin.proxies.create({ name: 'x', destinationUrl: 'https://api.example.com:22' }), 400, 'port'],
      ['no name', () => admin.proxies.create({ destinationUrl: 'https://api.example.com' } as never), 400, 'name'],
      [
        'bad transform',
        () => admin.proxies.create({ name: 'x', destinationUrl: 'https://api.example.com', requestTransform: { type: 'mask' } as never }),
        400,
        'request_transform',
      ],
      [
        'bad configuration',
        () => admin.proxies.create({ name: 'x', destinationUrl: 'https://api.example.com', configuration: { a: { nested: 1 } } as never }),
        400,
        'configuration',
      ],
      [
        'application not covered',
        () => manager.proxies.create({ name: 'x', destinationUrl: 'https://api.example.com', application: { id: wide.applicationId } }),
        403,
        'every permission',
      ],
      ['unknown application', () => admin.proxies.create({ name: 'x', destinationUrl: 'https://api.example.com', application: { id: 'nope' } }), 400, 'application.id'],
      ['not the author', () => manager.proxies.update(own.id, { name: 'p', destinationUrl: 'https://evil.example.com' }), 403, 'created it'],
      ['unknown proxy', () => admin.proxies.retrieve('00000000-0000-4000-8000-000000000000'), 404, 'Proxy'],
    ];
    for (const [what, call, status, words] of cases) {
      const failure = await sdkFailure(call()).catch((error: Error) => ({ status: 0, data: `${what}: ${error.message}` }));
      expect({ what, status: failure.status }).toEqual({ what, status });
      expect(JSON.stringify(failure.data), what).toContain(words);
      expect(JSON.stringify(failure.data)).not.toContain(SECRET);
    }
    const notMerge = await server.raw('PATCH', `/proxies/${own.id}`, { key: server.adminKey, body: { name: 'y' } });
    expect(notMerge.status).toBe(415);
    // Renaming is proxy:update alone; reconfiguring needs the author or an administrator.
    expect(
      (
        await server.raw('PATCH', `/proxies/${own.id}`, {
          key: await server.key({ type: 'management', permissions: ['proxy:update'] }),
          body: { name: 'renamed' },
          contentType: 'application/merge-patch+json',
        })
      ).status,
    ).toBe(200);
    expect((await admin.proxies.list()).data.map((p) => [p.name, p.destinationUrl])).toEqual([['renamed', 'https://api.example.com/']]);
  });
});
