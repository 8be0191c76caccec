// The PostgreSQL round trips of each hot path, pinned: a change that adds a query to a request
// fails here. Counted at the pool (every statement sent, BEGIN and COMMIT included), on the second
// identical request, so the API key cache (which has an invalidation rule) is warm as in a running
// server. The audit entries of reads, creates and runs are not the request's: they go out
// in batches (one INSERT per auditFlushMs, docs/storage.md "Audit entries survive an outage"), held back here so that the count is the
// request's own. docs/performance.md gives the figures before and after.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { createPostgresStore } from '../../src/postgres.js';
import type { PgPool, PgPoolClient, PgQueryConfig } from '../../src/storage/postgres/postgres-options.js';
import { ValidationError } from '../../src/errors/errors.js';
import { createTestVault, storeFixtures, type TestVault } from '../../src/testing/index.js';
import { dropSchema, endAdmin, freshSchema } from '../support/postgres.js';
import { describeEachPgRoute } from '../support/stores.js';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

/**
 * A pg Pool that records each statement sent through it or through a client it lends (`full`: the
 * whole text). While `held.until` is set, the answer of a statement it matches waits for it.
 */
function countingPool(pool: pg.Pool, sent: string[], full: string[], held: { match?: RegExp; until?: Promise<void> }): PgPool {
  const record = (config: PgQueryConfig) => {
    sent.push(config.text.replace(/\s+/g, ' ').slice(0, 80));
    full.push(config.text);
  };
  return {
    query: async (config) => {
      record(config);
      const answer = await pool.query(config as pg.QueryConfig);
      if (held.until !== undefined && held.match?.test(config.text)) await held.until;
      return answer as never;
    },
    connect: async () => {
      const client = await pool.connect();
      const lent: PgPoolClient = {
        query: (config) => {
          record(config);
          return client.query(config as pg.QueryConfig) as never;
        },
        release: (destroy) => client.release(destroy),
        on: (event, listener) => client.on(event, listener),
        removeListener: (event, listener) => client.removeListener(event, listener),
      };
      return lent;
    },
    end: () => pool.end(),
  };
}

// Directly and through PgBouncer in transaction mode (docs/scaling.md), when one is set: the same
// statements go through the pooler.
describeEachPgRoute('PostgreSQL round trips per request', (url, route) => {
  const sent: string[] = [];
  const full: string[] = [];
  const held: { match?: RegExp; until?: Promise<void> } = {};
  const schema = freshSchema('trips');
  let pool: pg.Pool;
  let vault: TestVault;
  let store: ReturnType<typeof createPostgresStore>;
  let send: (method: string, path: string, key: string, body?: unknown) => Promise<{ status: number; body: any; statements: string[] }>;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: url, max: 4 });
    // Behind PgBouncer 1.18 as docs/scaling.md starts instances there: unnamed from the start, so the
    // first statement it loses is not sent twice (the store's fallback) and the counts stay exact.
    store = createPostgresStore({ pool: countingPool(pool, sent, full, held), schema, preparedStatements: route === 'postgres' });
    vault = await createTestVault({ store, auditFlushMs: 60_000 });
    const handler = createFetchHandler(vault);
    send = async (method, path, key, body) => {
      sent.length = 0;
      full.length = 0;
      const response = await handler(
        new Request(`http://vault${path}`, {
          method,
          headers: { 'svc-api-key': key, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      );
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : null, statements: [...sent] };
    };
  });
  afterAll(async () => {
    await vault?.close();
    await pool?.end();
    await dropSchema(schema);
    await endAdmin();
  });

  it('GET, POST, list, search and react each take the round trips pinned here', async () => {
    const app = await vault.caller({ permissions: ['token:create', 'token:read', 'token:search', 'token:use'] });
    const admin = await vault.authenticate(vault.adminKey);
    const formula = await vault.formulas.create(admin, {
      name: 'last4',
      code: 'module.exports = async (req) => ({ raw: { last4: req.args.card.number.slice(-4) } });',
      configuration: [],
      request_parameters: [],
    });
    const reactor = await vault.reactors.create(admin, { name: 'last4', formula: { id: formula.id }, configuration: {} });
    const created = await send('POST', '/tokens', app.key, { type: 'card', data: CARD, deduplicate_token: false });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const paths: Array<[string, string, string, unknown?]> = [
      ['GET', 'GET', `/tokens/${id}`],
      ['POST', 'POST', '/tokens', { type: 'card', data: CARD, deduplicate_token: false }],
      ['list', 'GET', '/tokens?size=10'],
      ['search', 'POST', '/tokens/search', { query: 'type:card', size: 10 }],
      ['react', 'POST', `/reactors/${reactor.id}/react`, { args: { card: `{{ ${id} }}` } }],
    ];
    const counts: Record<string, number> = {};
    for (const [name, method, path, body] of paths) {
      await send(method, path, app.key, body);
      const second = await send(method, path, app.key, body);
      expect(second.status, `${name}: ${JSON.stringify(second.body)}`).toBeLessThan(300);
      counts[name] = second.statements.length;
      // A card has no metadata or search hashes: its creation leaves the index rows' parts out.
      if (name === 'POST') expect(full.join('\n')).not.toMatch(/token_metadata|token_search/);
      if (process.env.TOKENVAULT_PRINT_TRIPS) console.log(name, second.statements);
    }
    expect(counts).toEqual({ GET: 1, POST: 1, list: 1, search: 1, react: 2 });
  });

  it('token creations started in one turn go out as one statement, each answered as it would be alone', async () => {
    const app = await vault.caller({
      permissions: ['token:create', 'token:read', 'token:search'],
      rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:search'] }],
    });
    const taken = (await vault.tokens.create(app, { type: 'token', data: 'first', deduplicate_token: false })).id;
    await send('GET', `/tokens/${taken}`, app.key);
    const bodies = [
      { type: 'token', data: 'a', id: 'batch-a', deduplicate_token: false, metadata: { k: 'v' }, search_indexes: ['{{ data }}'] },
      { type: 'card', data: CARD, id: 'batch-b', deduplicate_token: false },
      { type: 'token', data: 'c', id: taken, deduplicate_token: false },
      { type: 'token', data: 'd', id: 'batch-twice', deduplicate_token: false },
      { type: 'token', data: 'e', id: 'batch-twice', deduplicate_token: false },
    ];
    const answers = await Promise.all(bodies.map((body) => send('POST', '/tokens', app.key, body)));
    expect(answers.map((a) => a.status)).toEqual([201, 201, 409, 201, 409]);
    expect(sent.filter((text) => text.startsWith('WITH'))).toHaveLength(1);
    // Each reads back as written: its data, its metadata and search rows.
    expect((await send('GET', '/tokens/batch-a', app.key)).body.data).toBe('a');
    expect((await send('GET', '/tokens/batch-twice', app.key)).body.data).toBe('d');
    expect((await send('GET', `/tokens/${taken}`, app.key)).body.data).toBe('first');
    expect((await send('POST', '/tokens/search', app.key, { query: 'metadata.k:v', size: 10 })).body.data.map((t: { id: string }) => t.id)).toEqual(['batch-a']);
    expect((await send('POST', '/tokens/search', app.key, { query: 'data:a', size: 10 })).body.data.map((t: { id: string }) => t.id)).toEqual(['batch-a']);
    expect((await send('GET', '/tokens/batch-b', app.key)).body.data).toEqual(CARD);
  });

  it('one batch may carry the same id in two tenants: each token gets its own index rows', async () => {
    const now = vault.clock.now();
    const [a, b] = [storeFixtures.TENANT_A, storeFixtures.TENANT_B];
    const answers = await Promise.all([
      store.createToken(storeFixtures.makeToken({ tenantId: a, id: 'both-tenants', metadata: { k: 'a' }, searchHashes: ['ha'] }), now),
      store.createToken(storeFixtures.makeToken({ tenantId: b, id: 'both-tenants', metadata: { k: 'b' }, searchHashes: ['hb'] }), now),
    ]);
    expect(answers).toEqual([{ status: 'created' }, { status: 'created' }]);
    const ids = async (tenant: string, filter: object) => (await store.listTokens(tenant, filter, { mode: 'cursor', size: 10 }, now)).items.map((t) => t.id);
    expect(await ids(b, { metadata: { k: 'b' } })).toEqual(['both-tenants']);
    expect(await ids(b, { metadata: { k: 'a' } })).toEqual([]);
    expect(await ids(a, { searchHashes: ['ha'] })).toEqual(['both-tenants']);
    expect(await ids(a, { searchHashes: ['hb'] })).toEqual([]);
  });

  it('a batch of creations that fails is sent again one token at a time, so a bad token fails alone', async () => {
    const app = await vault.caller({ permissions: ['token:create'] });
    sent.length = 0;
    // PostgreSQL refuses a NUL in text (the service refuses it earlier; the store is called directly here).
    const [good, bad] = await Promise.allSettled([
      store.createToken(storeFixtures.makeToken({ tenantId: app.tenantId, id: 'solo-good' }), vault.clock.now()),
      store.createToken(storeFixtures.makeToken({ tenantId: app.tenantId, id: 'solo-bad', type: 'bad\u0000type' }), vault.clock.now()),
    ]);
    expect(good).toEqual({ status: 'fulfilled', value: { status: 'created' } });
    expect(bad.status === 'rejected' && bad.reason).toBeInstanceOf(ValidationError);
    expect(sent.filter((text) => text.startsWith('WITH'))).toHaveLength(3);
    expect((await store.getToken(app.tenantId, 'solo-good', vault.clock.now()))?.id).toBe('solo-good');
    expect(await store.getToken(app.tenantId, 'solo-bad', vault.clock.now())).toBeNull();
  });

  it('token reads started in one turn go out as one statement, each answered as it would be alone', async () => {
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await vault.tokens.create(app, { type: 'token', data: `value ${i}` })).id);
    const expiring = await vault.tokens.create(app, { type: 'token', data: 'soon gone', expires_at: new Date(vault.clock.now() + 60_000).toISOString() });
    // Another tenant's token: its id names nothing here.
    const other = await vault.createTenant({ name: 'other' });
    const otherAdmin = await vault.authenticate(other.application.key!);
    const otherApp = await vault.applications.create(otherAdmin, { name: 'other', type: 'private', permissions: ['token:create', 'token:read'] });
    const foreign = await vault.tokens.create(await vault.authenticate(otherApp.key!), { type: 'token', data: 'theirs' });
    vault.clock.advance(120_000);
    const asked = [...ids, ids[0]!, expiring.id, foreign.id, 'no-such-token'];
    // The key's first use looks the application up; later ones find it cached.
    await send('GET', `/tokens/${ids[0]}`, app.key);
    const answers = await Promise.all(asked.map((id) => send('GET', `/tokens/${id}`, app.key)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 404, 404, 404]);
    expect(answers.slice(0, 5).map((a) => a.body.id)).toEqual(asked.slice(0, 5));
    expect(sent.filter((text) => text.startsWith('SELECT'))).toHaveLength(1);
    // A lone read still answers, alone.
    expect((await send('GET', `/tokens/${ids[2]}`, app.key)).body.id).toBe(ids[2]);
  });

  it('creations and reads asked for while one of their statements is in flight go out together after it', async () => {
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const now = vault.clock.now();
    const make = (id: string) => storeFixtures.makeToken({ tenantId: app.tenantId, id });
    for (const [kind, match, ask] of [
      ['create', /^WITH/, (n: number) => store.createToken(make(`inflight-${n}`), now)],
      ['read', /^SELECT/, (n: number) => store.getToken(app.tenantId, `inflight-${n}`, now)],
    ] as const) {
      let open!: () => void;
      held.match = match;
      held.until = new Promise<void>((resolve) => (open = resolve));
      sent.length = 0;
      full.length = 0;
      const first = ask(1);
      await new Promise((resolve) => setImmediate(resolve));
      // Two later turns while the first statement's answer is held: they wait for it.
      const second = ask(2);
      await new Promise((resolve) => setImmediate(resolve));
      const third = ask(3);
      await new Promise((resolve) => setImmediate(resolve));
      expect(
        sent.filter((text) => match.test(text)),
        kind,
      ).toHaveLength(1);
      held.until = undefined;
      open();
      const answers = await Promise.all([first, second, third]);
      expect(
        sent.filter((text) => match.test(text)),
        kind,
      ).toHaveLength(2);
      if (kind === 'create') {
        expect(answers).toEqual([{ status: 'created' }, { status: 'created' }, { status: 'created' }]);
        // Tokens without metadata or search hashes, alone or together: no index rows' parts.
        expect(full.filter((text) => match.test(text)).join('\n')).not.toMatch(/token_metadata|token_search/);
      } else expect(answers.map((t) => (t as { id: string } | null)?.id)).toEqual(['inflight-1', 'inflight-2', 'inflight-3']);
    }
  });
});
