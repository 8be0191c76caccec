// The Basis Theory Node SDK (node-sdk-harness.ts names the version), unchanged, against the real
// HTTP API (`--header-prefix BT`) on both stores: reactors (react, reactAsync and its results),
// proxies with code transforms in Basis Theory's shape on both runtimes (node-bt and node22) and
// the inbound tokenizing transform as Basis Theory documents it, logs with their entity filters,
// and webhooks (docs/basis-theory.md, Node SDK 5; docs/proxies.md, Code transforms).
import { expect, it } from 'vitest';
import type { AccessRule } from '../../src/permissions/permissions.js';
import { startReceiver } from '../proxy/receiver.js';
import { describeEachStore } from '../support/stores.js';
import { startSdkServer } from './harness.js';
import { NODE_SDK_VERSION, nodeSdk, nodeSdkFailure } from './node-sdk-harness.js';

const RULES: AccessRule[] = [{ description: 'all', priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] }];
const VISA = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const DEV = { reactors: { egress: { allowPrivateNetwork: true } } };
const ECHO = 'module.exports = async function (req) { return { raw: { card: req.args.card, key: req.configuration.KEY } }; };';

/** Basis Theory's node-bt request transform: req = { bt, args: { body, headers, method, path, query }, configuration }. */
const NODE_BT_REQUEST = `module.exports = async function (req) {
  const { args, configuration } = req;
  const { body, headers, method, path, query } = args;
  return { headers: { ...headers, authorization: 'Bearer ' + configuration.API_KEY }, body: { ...body, seen: [method, path, query.q] } };
};`;
/** A node-bt response transform: args hold the answer's body, headers and status. */
const NODE_BT_RESPONSE = `module.exports = async function (req) {
  const { body, headers, status } = req.args;
  return { headers: { ...headers, 'x-status-seen': String(status) }, body: { ...body, via: 'node-bt' } };
};`;
/** The node22 runtime: event = { req, configuration, logger, applicationOptions }. */
const NODE22_REQUEST = `module.exports = async function (event) {
  const { req, configuration, logger, applicationOptions } = event;
  logger.info('transforming', req.method);
  return { headers: req.headers, body: { ...req.body, runtime: 'node22', key: configuration.API_KEY, options: typeof applicationOptions } };
};`;
/** Basis Theory's inbound pattern, in our words: the transform tokenizes the posted card and forwards only the token id. */
const INBOUND_TOKENIZE = `module.exports = async function (req) {
  const { bt, args } = req;
  const { body, headers } = args;
  const token = await bt.tokens.create({ type: 'card', data: body.card });
  return { headers, body: { ...body, card: token.id } };
};`;

describeEachStore(`Basis Theory Node SDK ${NODE_SDK_VERSION}: reactors, proxies, logs, webhooks`, (store) => {
  it('reactors: create, get, list, update, patch, react, reactAsync ({ asyncReactorRequestId }) and results.get, delete', async () => {
    const server = await startSdkServer(store);
    const admin = nodeSdk(server.url, server.adminKey);
    const bt = nodeSdk(server.url, await server.key({ permissions: ['token:create', 'token:use'], rules: RULES }));
    const card = await bt.tokens.create({ type: 'card', data: VISA });
    const reactor = await admin.reactors.create({ name: 'echo', code: ECHO, configuration: { KEY: 'k1' } });
    expect(reactor).toMatchObject({ id: expect.any(String), name: 'echo' });
    expect(await admin.reactors.get(reactor.id!)).toMatchObject({ id: reactor.id, name: 'echo' });
    expect((await admin.reactors.list()).data.map((r) => r.id)).toContain(reactor.id);
    expect(await admin.reactors.update(reactor.id!, { name: 'echo 2', code: ECHO, configuration: { KEY: 'k2' } })).toMatchObject({ name: 'echo 2' });
    await admin.reactors.patch(reactor.id!, { name: 'echo 3' });
    expect((await admin.reactors.get(reactor.id!)).name).toBe('echo 3');

    expect(await bt.reactors.react(reactor.id!, { args: { card: `{{ ${card.id} }}` } })).toMatchObject({ raw: { card: VISA, key: 'k2' } });

    const accepted = await bt.reactors.reactAsync(reactor.id!, { args: { card: `{{ ${card.id} }}` } });
    expect(accepted.asyncReactorRequestId).toEqual(expect.any(String));
    const requestId = accepted.asyncReactorRequestId!;
    expect(await bt.reactors.results.get(reactor.id!, requestId)).toMatchObject({ id: requestId, status: 'pending' });
    expect(await server.vault.worker.runDue()).toBe(1);
    const done = (await bt.reactors.results.get(reactor.id!, requestId)) as Record<string, unknown>;
    expect(done).toMatchObject({ status: 'completed', raw: { card: VISA, key: 'k2' }, result: { raw: { card: VISA, key: 'k2' } } });
    expect((await nodeSdkFailure(bt.reactors.results.get(reactor.id!, '00000000-0000-4000-8000-000000000000'))).status).toBe(404);

    await admin.reactors.delete(reactor.id!);
    expect((await nodeSdkFailure(admin.reactors.get(reactor.id!))).status).toBe(404);
  });

  it('proxies: create with requestTransforms / responseTransforms in both runtimes, get, list, update, patch, invoke with BT-PROXY-KEY, delete', async () => {
    const server = await startSdkServer(store, DEV);
    const receiver = await startReceiver();
    receiver.answer = (request, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ received: JSON.parse(request.body) }));
    };
    const admin = nodeSdk(server.url, server.adminKey);
    const caller = await server.key({ permissions: ['proxy:invoke'] });
    const proxy = await admin.proxies.create({
      name: 'charges',
      destinationUrl: receiver.url,
      requestTransforms: [{ type: 'code', code: NODE_BT_REQUEST }],
      responseTransforms: [{ type: 'code', code: NODE_BT_RESPONSE, options: { runtime: { image: 'node-bt' } } }],
      configuration: { API_KEY: 'sk_configured' },
      requireAuth: true,
    });
    expect(proxy).toMatchObject({ id: expect.any(String), key: expect.any(String), requireAuth: true });
    expect((proxy.requestTransforms ?? [])[0]).toMatchObject({ type: 'code', options: { runtime: { image: 'node-bt' } } });
    const invoke = (key: string, body: unknown) =>
      fetch(`${server.url}/proxy/charge?q=1`, {
        method: 'POST',
        headers: { 'BT-PROXY-KEY': key, 'BT-API-KEY': caller, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    const answer = await invoke(proxy.key!, { amount: 5 });
    expect(answer.status).toBe(201);
    expect(answer.headers.get('x-status-seen')).toBe('201');
    expect(await answer.json()).toEqual({ received: { amount: 5, seen: ['POST', '/charge', '1'] }, via: 'node-bt' });
    expect(receiver.received[0]!.headers.authorization).toBe('Bearer sk_configured');

    expect(await admin.proxies.get(proxy.id!)).toMatchObject({ id: proxy.id, name: 'charges' });
    expect((await admin.proxies.list()).data.map((p) => p.id)).toContain(proxy.id);
    const node22 = await admin.proxies.update(proxy.id!, {
      name: 'charges 22',
      destinationUrl: receiver.url,
      requestTransforms: [{ type: 'code', code: NODE22_REQUEST, options: { runtime: { image: 'node22' } } }],
      configuration: { API_KEY: 'sk_22' },
      requireAuth: true,
    });
    expect(node22.name).toBe('charges 22');
    expect((await invoke(proxy.key!, { amount: 6 })).status).toBe(201);
    expect(JSON.parse(receiver.received[1]!.body)).toEqual({ amount: 6, runtime: 'node22', key: 'sk_22', options: 'object' });
    expect(await admin.proxies.patch(proxy.id!, { name: 'renamed' })).toBeUndefined();
    expect((await admin.proxies.get(proxy.id!)).name).toBe('renamed');

    // A runtime the vault does not run, or dependencies it cannot install: our 400, nothing stored.
    const refused = await nodeSdkFailure(
      admin.proxies.create({ name: 'x', destinationUrl: receiver.url, requestTransforms: [{ type: 'code', code: NODE_BT_REQUEST, options: { runtime: { image: 'python3' } } }] }),
    );
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toMatch(/must be one of: node-bt, node22/);
    const withDependencies = await nodeSdkFailure(
      admin.proxies.create({
        name: 'x',
        destinationUrl: receiver.url,
        requestTransforms: [{ type: 'code', code: NODE22_REQUEST, options: { runtime: { image: 'node22', dependencies: { axios: '1' } } } }],
      }),
    );
    expect(withDependencies.status).toBe(400);
    expect((await admin.proxies.list()).data).toHaveLength(1);

    await admin.proxies.delete(proxy.id!);
    expect((await nodeSdkFailure(admin.proxies.get(proxy.id!))).status).toBe(404);
  });

  it("inbound: Basis Theory's tokenizing request transform (no API key) forwards a token id, never the card", async () => {
    const server = await startSdkServer(store, DEV);
    const receiver = await startReceiver();
    const admin = nodeSdk(server.url, server.adminKey);
    const inbound = await admin.applications.create({
      name: 'inbound',
      type: 'private',
      permissions: ['token:create'],
      rules: [{ description: 'all', priority: 0, container: '/', transform: 'reveal', permissions: ['token:create'] }],
    });
    const proxy = await admin.proxies.create({
      name: 'inbound',
      destinationUrl: receiver.url,
      requestTransforms: [{ code: INBOUND_TOKENIZE }],
      application: { id: inbound.id },
      requireAuth: false,
    });
    const posted = await fetch(`${server.url}/proxy/webhook`, {
      method: 'POST',
      headers: { 'BT-PROXY-KEY': proxy.key!, 'content-type': 'application/json' },
      body: JSON.stringify({ card: VISA, order: 'o1' }),
    });
    expect(posted.status).toBe(201);
    const sent = JSON.parse(receiver.received[0]!.body) as { card: string; order: string };
    expect(receiver.received[0]!.body).not.toContain(VISA.number);
    expect(sent.order).toBe('o1');
    const reader = nodeSdk(
      server.url,
      await server.key({ permissions: ['token:read'], rules: [{ description: 'all', priority: 0, container: '/', transform: 'reveal', permissions: ['token:read'] }] }),
    );
    expect((await reader.tokens.get(sent.card)).data).toEqual(VISA);
  });

  it('logs: entries carry entity_type, entity_id, actor_id, actor_type, message, created_at; entityType / entityId filter; getEntityTypes', async () => {
    const server = await startSdkServer(store);
    const bt = nodeSdk(server.url, await server.key({ permissions: ['token:create', 'token:read'], rules: RULES }));
    const logs = nodeSdk(server.url, await server.key({ permissions: ['log:read'] }));
    const first = await bt.tokens.create({ type: 'token', data: 'one' });
    await bt.tokens.get(first.id!);
    const app = await nodeSdk(server.url, server.adminKey).applications.create({ name: 'other', type: 'private', permissions: ['token:read'] });

    const about = await logs.logs.list({ entityId: first.id! });
    expect(about.data.map((entry) => entry.operation)).toEqual(['token:create', 'token:read']);
    const entry = about.data[0]!;
    expect(entry).toMatchObject({
      entityType: 'token',
      entityId: first.id,
      actorType: 'application',
      tenantId: server.vault.tenantId,
      message: expect.stringMatching(/succeeded/),
    });
    expect(entry.createdAt).toBeInstanceOf(Date);
    expect(entry.actorId).toEqual(expect.any(String));
    expect(JSON.stringify(about.data)).not.toContain('one"');

    // Pages of one entry, followed by the SDK: only application entries, the one made here last.
    const applications = await logs.logs.list({ entityType: 'application', size: 1 });
    expect(applications.data).toHaveLength(1);
    const appEntries: [string | undefined, string | undefined][] = [];
    for await (const e of applications) appEntries.push([e.entityType, e.entityId]);
    expect(appEntries.length).toBeGreaterThan(1);
    expect(appEntries.every(([type]) => type === 'application')).toBe(true);
    expect(appEntries.at(-1)).toEqual(['application', app.id]);
    const tokens: string[] = [];
    for await (const e of await logs.logs.list({ entityType: 'token', size: 1 })) tokens.push(e.entityType!);
    expect(tokens).toEqual(['token', 'token']);
    const second = await server.raw('GET', '/logs?entity_type=token&page=2&size=1', { key: await server.key({ permissions: ['log:read'] }) });
    expect(second.body).toMatchObject({ pagination: { total_items: 2, page_number: 2, total_pages: 2 }, data: [{ entity_type: 'token', operation: 'token:read' }] });
    expect((await server.raw('GET', '/logs?entity_type=', { key: await server.key({ permissions: ['log:read'] }) })).status).toBe(400);

    expect((await logs.logs.getEntityTypes()).map((t) => t.value)).toEqual(expect.arrayContaining(['token', 'application', 'reactor', 'proxy']));
  });

  it('webhooks: create, get, list, update, events.list, delete, each with status enabled', async () => {
    const server = await startSdkServer(store, DEV);
    const receiver = await startReceiver();
    const admin = nodeSdk(server.url, server.adminKey);
    const hook = await admin.webhooks.create({ name: 'events', url: receiver.url, events: ['token.created'] });
    expect(hook).toMatchObject({ id: expect.any(String), status: 'enabled', name: 'events', url: receiver.url, events: ['token.created'], tenantId: server.vault.tenantId });
    expect(await admin.webhooks.get(hook.id)).toMatchObject({ id: hook.id, status: 'enabled' });
    expect((await admin.webhooks.list()).data.map((w) => [w.id, w.status])).toEqual([[hook.id, 'enabled']]);
    expect(await admin.webhooks.update(hook.id, { name: 'renamed', url: receiver.url, events: ['token.created', 'token.deleted'] })).toMatchObject({
      name: 'renamed',
      status: 'enabled',
    });
    expect(await admin.webhooks.events.list()).toEqual(expect.arrayContaining(['token.created', 'token.deleted']));
    expect((await nodeSdkFailure(nodeSdk(server.url, await server.key({ permissions: ['token:read'] })).webhooks.events.list())).status).toBe(403);
    await admin.webhooks.delete(hook.id);
    expect((await nodeSdkFailure(admin.webhooks.get(hook.id))).status).toBe(404);
  });
});
