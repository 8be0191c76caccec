import { expect, it } from 'vitest';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import { describeEachStore } from '../support/stores.js';
import { sdkFailure, startSdkServer } from './harness.js';

/**
 * The Basis Theory JS SDK (harness.ts names the version), unchanged, against the real HTTP API with
 * `--header-prefix BT`: every call that maps to a feature of the vault, exactly as the SDK sends it
 * (trailing slashes, camelCase ↔ snake_case, merge-patch PATCH, an empty form-labelled regenerate).
 */
const PRIVATE: Permission[] = [
  'token:create',
  'token:read',
  'token:update',
  'token:delete',
  'token:search',
  'token:use',
  'reactor:create',
  'reactor:read',
  'reactor:update',
  'reactor:delete',
];
const REVEAL_ALL: AccessRule[] = [{ description: 'everything', priority: 1, container: '/', transform: 'reveal', permissions: PRIVATE.filter((p) => p.startsWith('token:')) }];
const VISA = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const ECHO = 'module.exports = async function (req) { return { raw: { args: req.args, key: req.configuration.KEY } }; };';

describeEachStore('Basis Theory JS SDK against tokenvault serve --header-prefix BT', (store) => {
  it('applications: create, retrieve, list, update, regenerateKey (the old key stops), delete', async () => {
    const server = await startSdkServer(store);
    const admin = await server.sdk(server.adminKey);
    const app = await admin.applications.create({
      name: 'checkout',
      type: 'private',
      permissions: ['token:create', 'token:read'],
      rules: [{ description: 'pci', priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
    });
    expect(app).toMatchObject({ name: 'checkout', type: 'private', tenantId: server.vault.tenantId, permissions: ['token:create', 'token:read'] });
    expect(app.key).toMatch(/^tv_/);
    expect(await admin.applications.retrieve(app.id)).toMatchObject({ id: app.id, name: 'checkout' });
    const listed = await admin.applications.list({ size: 50 });
    expect(listed.data.map((a) => a.id)).toContain(app.id);
    expect(listed.pagination.pageSize).toBe(50);
    const updated = await admin.applications.update(app.id, { name: 'checkout v2', permissions: ['token:create'], rules: [] });
    expect(updated).toMatchObject({ name: 'checkout v2', permissions: ['token:create'] });
    const regenerated = await admin.applications.regenerateKey(app.id);
    expect(regenerated.key).toMatch(/^tv_/);
    expect(regenerated.key).not.toBe(app.key);
    const stale = await server.sdk(app.key!);
    expect((await sdkFailure(stale.tokens.create({ type: 'token', data: 'x' }))).status).toBe(401);
    const fresh = await server.sdk(regenerated.key!);
    await expect(fresh.tokens.create({ type: 'token', data: 'x' })).resolves.toMatchObject({ type: 'token' });
    await admin.applications.delete(app.id);
    expect((await sdkFailure(admin.applications.retrieve(app.id))).status).toBe(404);
  });

  it('tokens: create, retrieve, list by metadata with cursor paging (pagination.after), update, search with paging, tokenize, delete', async () => {
    const server = await startSdkServer(store);
    const bt = await server.sdk(await server.key({ permissions: PRIVATE, rules: REVEAL_ALL }));
    const card = await bt.tokens.create({
      type: 'card',
      data: VISA,
      metadata: { customerId: 'cus_1', tag: 'x' },
      searchIndexes: ['{{ data.number | last4 }}'],
      fingerprintExpression: '{{ data.number }}',
    });
    expect(card).toMatchObject({ type: 'card', data: VISA, metadata: { customerId: 'cus_1', tag: 'x' }, searchIndexes: ['{{ data.number | last4 }}'], containers: ['/pci/high/'] });
    const other = await bt.tokens.create({ type: 'token', data: { ssn: '123-45-6789' }, metadata: { tag: 'x' } });
    await bt.tokens.create({ type: 'token', data: 'untagged' });
    expect(await bt.tokens.retrieve(card.id)).toMatchObject({ id: card.id, data: VISA, createdAt: expect.any(String), tenantId: server.vault.tenantId });

    const first = await bt.tokens.list({ metadata: { tag: 'x' }, size: 1 });
    expect(first.data).toHaveLength(1);
    expect(first.pagination.after).toEqual(expect.any(String));
    const second = await bt.tokens.list({ metadata: { tag: 'X' }, size: 1, start: first.pagination.after! });
    expect([...first.data, ...second.data].map((t) => t.id).sort()).toEqual([card.id, other.id].sort());
    expect(second.pagination.after).toBeUndefined();
    const byType = await bt.tokens.list({ type: 'card', page: 1, size: 10 });
    expect(byType.pagination).toMatchObject({ totalItems: 1, pageNumber: 1, pageSize: 10, totalPages: 1 });

    const patched = await bt.tokens.update(card.id, { metadata: { note: 'vip', tag: null as unknown as string } });
    expect(patched.metadata).toEqual({ customerId: 'cus_1', note: 'vip' });

    const searched = await bt.tokens.search({ query: 'data:4242 AND type:card', page: 1, size: 5 });
    expect(searched.data.map((t) => t.id)).toEqual([card.id]);
    expect(searched.pagination).toMatchObject({ totalItems: 1, pageNumber: 1, pageSize: 5 });
    const cursor = await bt.tokens.search({ query: 'type:token', size: 1 });
    expect(cursor.data).toHaveLength(1);
    expect(cursor.pagination.after).toEqual(expect.any(String));

    const tokenized = (await bt.tokenize({ first: { type: 'token', data: 'a' }, nested: [{ type: 'token', data: 'b' }] })) as { first: { id: string }; nested: { id: string }[] };
    expect(tokenized.first.id).toEqual(expect.any(String));
    expect(tokenized.nested[0]!.id).toEqual(expect.any(String));

    await bt.tokens.delete(card.id);
    expect((await sdkFailure(bt.tokens.retrieve(card.id))).status).toBe(404);
  });

  it('reactor formulas (type private) and a reactor on one: create, retrieve, list, update, react with detokenized args, delete', async () => {
    const server = await startSdkServer(store);
    const key = await server.key({ permissions: PRIVATE, rules: REVEAL_ALL });
    const bt = await server.sdk(key);
    const formula = await bt.reactorFormulas.create({
      name: 'echo',
      description: 'echoes its args',
      type: 'private',
      code: ECHO,
      configuration: [{ name: 'KEY', description: 'a key', type: 'string' }],
      requestParameters: [{ name: 'card', description: 'the card', type: 'string', optional: true }],
    });
    expect(formula).toMatchObject({ name: 'echo', type: 'private', requestParameters: [{ name: 'card', type: 'string', optional: true }] });
    expect(await bt.reactorFormulas.retrieve(formula.id)).toMatchObject({ id: formula.id, code: ECHO });
    expect((await bt.reactorFormulas.list({ size: 10 })).data.map((f) => f.id)).toEqual([formula.id]);
    const renamed = await bt.reactorFormulas.update(formula.id, { name: 'echo v2', type: 'private', code: ECHO, configuration: formula.configuration, requestParameters: [] });
    expect(renamed).toMatchObject({ name: 'echo v2', requestParameters: [] });

    const reactor = await bt.reactors.create({ name: 'echo reactor', configuration: { KEY: 'k1' }, formula: { id: formula.id } } as Parameters<typeof bt.reactors.create>[0]);
    expect(reactor).toMatchObject({ name: 'echo reactor', configuration: { KEY: 'k1' }, formula: { id: formula.id } });
    const token = await bt.tokens.create({ type: 'token', data: 'secret-value' });
    const reacted = await bt.reactors.react(reactor.id, { args: { value: `{{ ${token.id} }}`, plain: 1 } });
    expect(reacted).toEqual({ raw: { args: { value: 'secret-value', plain: 1 }, key: 'k1' } });
    expect((await sdkFailure(bt.reactorFormulas.delete(formula.id))).status).toBe(409);
    await bt.reactors.delete(reactor.id);
    await bt.reactorFormulas.delete(formula.id);
    expect((await sdkFailure(bt.reactorFormulas.retrieve(formula.id))).status).toBe(404);
  });

  it('reactors with inline code: create, retrieve, list by name, update (PUT code), patch (merge), react, delete', async () => {
    const server = await startSdkServer(store);
    const key = await server.key({ permissions: PRIVATE, rules: REVEAL_ALL });
    const bt = await server.sdk(key);
    const app = (await server.vault.caller({ permissions: ['token:create'], type: 'public' })).applicationId;
    const reactor = await bt.reactors.create({ name: 'inline', code: ECHO, configuration: { KEY: 'k1', OTHER: 'o' }, application: { id: app } });
    expect(reactor).toMatchObject({ name: 'inline', code: ECHO, configuration: { KEY: 'k1', OTHER: 'o' }, application: { id: app, type: 'public' } });
    expect(reactor.formula).toBeUndefined();
    expect(await bt.reactors.retrieve(reactor.id)).toMatchObject({ id: reactor.id, code: ECHO });
    expect((await bt.reactors.list({ name: 'inl' })).data.map((r) => r.id)).toEqual([reactor.id]);

    const token = await bt.tokens.create({ type: 'card', data: VISA });
    expect(await bt.reactors.react(reactor.id, { args: { card: `{{ ${token.id} }}` } })).toEqual({ raw: { args: { card: VISA }, key: 'k1' } });

    const recoded = 'module.exports = async (req) => ({ raw: { v: 2, key: req.configuration.KEY } });';
    const updated = await bt.reactors.update(reactor.id, { name: 'inline v2', code: recoded, configuration: { KEY: 'k2' } });
    expect(updated).toMatchObject({ name: 'inline v2', code: recoded, configuration: { KEY: 'k2' } });
    expect(updated.application).toBeUndefined();
    expect(await bt.reactors.react(reactor.id, { args: {} })).toEqual({ raw: { v: 2, key: 'k2' } });

    await bt.reactors.patch(reactor.id, { name: 'inline v3', configuration: { EXTRA: 'e' } });
    expect(await bt.reactors.retrieve(reactor.id)).toMatchObject({ name: 'inline v3', code: recoded, configuration: { KEY: 'k2', EXTRA: 'e' } });
    // The SDK's PatchReactor types configuration values as nullable: null removes that name.
    await bt.reactors.patch(reactor.id, { configuration: { KEY: null } });
    expect((await bt.reactors.retrieve(reactor.id)).configuration).toEqual({ EXTRA: 'e' });

    await bt.reactors.delete(reactor.id);
    expect((await sdkFailure(bt.reactors.retrieve(reactor.id))).status).toBe(404);
  });

  it('detokenize (raw: the SDK has no call for it), permissions.list and tenants.retrieve', async () => {
    const server = await startSdkServer(store);
    const key = await server.key({ permissions: PRIVATE, rules: REVEAL_ALL });
    const bt = await server.sdk(key);
    const token = await bt.tokens.create({ type: 'card', data: VISA });
    const detokenized = await server.raw('POST', '/detokenize', {
      key,
      body: { card: `{{ ${token.id} }}`, last4: `{{ ${token.id} | json: '$.number' | last4 }}`, text: `n={{ ${token.id} | json: '$.number' }}`, list: [1, null, true] },
    });
    expect(detokenized.status).toBe(200);
    expect(detokenized.body).toEqual({ card: VISA, last4: '4242', text: 'n=4242424242424242', list: [1, null, true] });

    const all = await bt.permissions.list();
    expect(all).toContainEqual({ type: 'token:use', description: expect.any(String), applicationTypes: ['private'] });
    expect(all).toContainEqual({ type: 'reactor:create', description: expect.any(String), applicationTypes: ['private', 'management'] });
    expect((await bt.permissions.list({ applicationType: 'public' })).map((p) => p.type)).toEqual(['token:create', 'token:update', 'token-intent:create']);

    expect(await bt.tenants.retrieve()).toEqual({ id: server.vault.tenantId, name: 'test', createdAt: expect.any(String) });
  });

  it('what the README lists as unsupported fails plainly (4xx), and logs.list lists the audit log', async () => {
    const server = await startSdkServer(store);
    const admin = await server.sdk(server.adminKey);
    const user = await server.sdk(await server.key({ permissions: PRIVATE }));
    const token = await user.tokens.create({ type: 'token', data: 'x' });
    await user.tokens.delete(token.id); // a delete is audited in its own transaction (no queue to wait for)
    const logs = await admin.logs.list({ size: 100 });
    expect(logs.data).toContainEqual(expect.objectContaining({ operation: 'token:delete', resourceId: token.id }));
    expect((await sdkFailure(admin.tenants.update({ name: 'renamed' }))).status).toBe(405);
    // GET /applications/key answers the calling key's own application, as Basis Theory does.
    expect(await admin.applications.retrieveByKey()).toMatchObject({ id: expect.any(String), tenantId: server.vault.tenantId });
    const failed = await sdkFailure(admin.reactorFormulas.create({ name: 'f', type: 'private', code: ECHO, icon: 'data:,', configuration: [], requestParameters: [] }));
    expect(failed.status).toBe(400);
    expect(failed.data.errors).toHaveProperty(['icon']);
  });
});
