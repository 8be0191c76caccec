// The Basis Theory Node SDK (node-sdk-harness.ts names the version), unchanged, against the real
// HTTP API (`--header-prefix BT`) on both stores: tokens (v1 calls and the v2 cursor list and
// search), token intents, applications (getByKey too), application keys, sessions, permissions
// and the tenant (docs/basis-theory.md, Node SDK 5).
import { expect, it } from 'vitest';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import { describeEachStore } from '../support/stores.js';
import { startSdkServer } from './harness.js';
import { NODE_SDK_VERSION, nodeSdk, nodeSdkFailure } from './node-sdk-harness.js';

const TOKEN_PERMISSIONS: Permission[] = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'];
const REVEAL_ALL: AccessRule[] = [{ description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: TOKEN_PERMISSIONS }];
const VISA = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

describeEachStore(`Basis Theory Node SDK ${NODE_SDK_VERSION}: tokens, intents, applications, keys, sessions`, (store) => {
  it('tokens: create, get, update, tokenize, detokenize, delete', async () => {
    const server = await startSdkServer(store);
    const bt = nodeSdk(server.url, await server.key({ permissions: TOKEN_PERMISSIONS, rules: REVEAL_ALL }));
    const card = await bt.tokens.create({ type: 'card', data: VISA, metadata: { customer: 'c1' }, searchIndexes: ['{{ data.number | last4 }}'] });
    expect(card).toMatchObject({ id: expect.any(String), type: 'card', data: VISA, metadata: { customer: 'c1' }, tenantId: server.vault.tenantId });
    expect(card.createdAt).toBeInstanceOf(Date);
    expect(await bt.tokens.get(card.id!)).toMatchObject({ id: card.id, data: VISA });
    const updated = await bt.tokens.update(card.id!, { metadata: { customer: 'c2' } });
    expect(updated).toMatchObject({ id: card.id, metadata: { customer: 'c2' } });

    const tokenized = (await bt.tokens.tokenize({ first: { type: 'token', data: 'alpha' }, second: { type: 'token', data: 'beta' } })) as Record<string, { id: string }>;
    expect(tokenized.first!.id).toEqual(expect.any(String));
    expect(await bt.tokens.detokenize({ card: `{{ ${card.id} }}`, note: `{{ ${tokenized.second!.id} }}` })).toEqual({ card: VISA, note: 'beta' });

    await bt.tokens.delete(card.id!);
    expect((await nodeSdkFailure(bt.tokens.get(card.id!))).status).toBe(404);
  });

  it('tokens.listV2 and searchV2: cursor pages (start, size, pagination.next) that the SDK follows to the end; filters; page is refused', async () => {
    const server = await startSdkServer(store);
    const reader = await server.key({ permissions: TOKEN_PERMISSIONS, rules: REVEAL_ALL });
    const bt = nodeSdk(server.url, reader);
    const tagged: string[] = [];
    for (let i = 0; i < 5; i++) tagged.push((await bt.tokens.create({ type: 'token', data: `v${i}`, metadata: { batch: 'b1' }, containers: ['/general/low/'] })).id!);
    const card = await bt.tokens.create({ type: 'card', data: VISA, fingerprintExpression: '{{ data.number }}' });

    const first = await bt.tokens.listV2({ metadata: { batch: 'b1' }, size: 2 });
    expect(first.data).toHaveLength(2);
    expect(first.hasNextPage()).toBe(true);
    const raw = await server.raw('GET', '/v2/tokens?size=2&metadata=' + encodeURIComponent('{"batch":"b1"}'), { key: reader });
    expect(raw.body.pagination).toEqual({ page_size: 2, next: expect.any(String), after: raw.body.pagination.next });
    const seen: string[] = [];
    for await (const token of first) seen.push(token.id!);
    expect(seen.sort()).toEqual([...tagged].sort());

    const byType = await bt.tokens.listV2({ type: 'card' });
    expect(byType.data.map((t) => t.id)).toEqual([card.id]);
    const byContainer = await bt.tokens.listV2({ container: '/general/low/', size: 10 });
    expect(byContainer.data).toHaveLength(5);
    const byFingerprint = await bt.tokens.listV2({ fingerprint: card.fingerprint! });
    expect(byFingerprint.data.map((t) => t.id)).toEqual([card.id]);
    // The last page has no next cursor.
    expect(byType.hasNextPage()).toBe(false);

    const searched = await bt.tokens.searchV2({ query: 'metadata.batch:b1', size: 3 });
    expect(searched.data).toHaveLength(3);
    const found: string[] = [];
    for await (const token of searched) found.push(token.id!);
    expect(found.sort()).toEqual([...tagged].sort());

    // v2 pages by cursor only; a malformed metadata filter is our 400.
    expect((await server.raw('POST', '/v2/tokens/search', { key: reader, body: { query: 'type:card', page: 1 } })).body.errors.page[0]).toMatch(/pages by cursor/);
    const badMetadata = await server.raw('GET', '/v2/tokens?metadata=%7Bnot-json', { key: reader });
    expect(badMetadata.status).toBe(400);
    expect(badMetadata.body.errors.metadata[0]).toMatch(/JSON object of strings/);
    expect((await server.raw('GET', '/v2/tokens?page=1', { key: reader })).status).toBe(400);
    // A fingerprint is an equality oracle: a masked reader's filter matches nothing.
    const masked = nodeSdk(
      server.url,
      await server.key({ permissions: ['token:read'], rules: [{ description: 'mask', priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] }] }),
    );
    expect((await masked.tokens.listV2({ fingerprint: card.fingerprint! })).data).toEqual([]);
    expect((await masked.tokens.listV2({ type: 'card' })).data).toHaveLength(1);
  });

  it('tokenIntents: create, get, delete; a token made from one', async () => {
    const server = await startSdkServer(store);
    const bt = nodeSdk(server.url, await server.key({ permissions: ['token-intent:create', 'token-intent:read', 'token-intent:delete', ...TOKEN_PERMISSIONS], rules: REVEAL_ALL }));
    const intent = await bt.tokenIntents.create({ type: 'card', data: VISA });
    expect(intent).toMatchObject({ id: expect.any(String), type: 'card' });
    expect(JSON.stringify(intent)).not.toContain(VISA.number);
    expect(await bt.tokenIntents.get(intent.id!)).toMatchObject({ id: intent.id, type: 'card' });
    const token = await bt.tokens.create({ tokenIntentId: intent.id! } as never);
    expect(await bt.tokens.get(token.id!)).toMatchObject({ data: VISA });
    const other = await bt.tokenIntents.create({ type: 'token', data: 'x' });
    await bt.tokenIntents.delete(other.id!);
    expect((await nodeSdkFailure(bt.tokenIntents.get(other.id!))).status).toBe(404);
  });

  it('applications: create, get, getByKey (any key, its own application), list, update, delete; application keys; permissions; tenant', async () => {
    const server = await startSdkServer(store);
    const admin = nodeSdk(server.url, server.adminKey);
    const app = await admin.applications.create({ name: 'checkout', type: 'private', permissions: ['token:create'] });
    expect(app).toMatchObject({ name: 'checkout', type: 'private', tenantId: server.vault.tenantId, key: expect.stringMatching(/^tv_/) });
    expect(await admin.applications.get(app.id!)).toMatchObject({ id: app.id, name: 'checkout' });
    const listed = await admin.applications.list({ size: 50 });
    expect(listed.data.map((a) => a.id)).toContain(app.id);
    expect(await admin.applications.update(app.id!, { name: 'checkout v2', permissions: ['token:create', 'token:read'] })).toMatchObject({ name: 'checkout v2' });

    // getByKey: the calling key's application, though it holds no application:read.
    const own = nodeSdk(server.url, app.key!);
    expect(await own.applications.getByKey()).toMatchObject({ id: app.id, name: 'checkout v2', permissions: ['token:create', 'token:read'] });
    expect((await nodeSdkFailure(nodeSdk(server.url, 'tv_not_a_key').applications.getByKey())).status).toBe(401);

    const key = await admin.applicationKeys.create(app.id!);
    expect(key).toMatchObject({ id: expect.any(String), key: expect.stringMatching(/^tv_/) });
    expect((await admin.applicationKeys.list(app.id!)).map((k) => k.id)).toContain(key.id);
    expect(await admin.applicationKeys.get(app.id!, key.id!)).toMatchObject({ id: key.id });
    expect(await nodeSdk(server.url, key.key!).applications.getByKey()).toMatchObject({ id: app.id });
    await admin.applicationKeys.delete(app.id!, key.id!);
    expect((await nodeSdkFailure(nodeSdk(server.url, key.key!).applications.getByKey())).status).toBe(401);

    const permissions = await admin.permissions.list({ applicationType: 'private' });
    expect(permissions.map((p) => p.type)).toContain('token:create');
    expect(await admin.tenants.self.get()).toMatchObject({ id: server.vault.tenantId });

    await admin.applications.delete(app.id!);
    expect((await nodeSdkFailure(admin.applications.get(app.id!))).status).toBe(404);
    expect((await nodeSdkFailure(own.applications.getByKey())).status).toBe(401);
  });

  it('sessions: create (public), authorize (private), the session key reads; getByKey with a session key is a 404', async () => {
    const server = await startSdkServer(store);
    const backend = nodeSdk(
      server.url,
      await server.key({
        permissions: ['token:create', 'token:read'],
        rules: [{ description: 'pci', priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
      }),
    );
    const browser = nodeSdk(server.url, await server.key({ permissions: ['token:create'], type: 'public' }));
    const card = await backend.tokens.create({ type: 'card', data: VISA });
    const session = await browser.sessions.create();
    expect(session).toMatchObject({ sessionKey: expect.stringMatching(/^tvs_/), nonce: expect.any(String) });
    expect(session.expiresAt).toBeInstanceOf(Date);
    await backend.sessions.authorize({
      nonce: session.nonce!,
      rules: [{ description: 'read', priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }],
    });
    const asSession = nodeSdk(server.url, session.sessionKey!);
    expect((await asSession.tokens.get(card.id!)).data).toMatchObject({ number: VISA.number });
    expect((await nodeSdkFailure(asSession.applications.getByKey())).status).toBe(404);
  });
});
