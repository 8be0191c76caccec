// The PostgreSQL round trips of each hot path, pinned: a change that adds a query to a request
// fails here. Counted at the pool (every statement sent, BEGIN and COMMIT included), on the second
// identical request, so the API key cache (which has an invalidation rule) is warm as in a running
// server. The audit entries of reads, creates and runs are not the request's: they go out
// in batches (one INSERT per auditFlushMs, docs/storage.md "Audit entries survive an outage"), held back here so that the count is the
// request's own. docs/performance.md gives the figures before and after issue 21.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { createPostgresStore } from '../../src/postgres.js';
import type { PgPool, PgPoolClient, PgQueryConfig } from '../../src/storage/postgres/postgres-options.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { dropSchema, endAdmin, freshSchema } from '../support/postgres.js';
import { describePostgres } from '../support/stores.js';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

/** A pg Pool that records each statement sent through it or through a client it lends. */
function countingPool(pool: pg.Pool, sent: string[]): PgPool {
  const record = (config: PgQueryConfig) => sent.push(config.text.replace(/\s+/g, ' ').slice(0, 80));
  return {
    query: (config) => {
      record(config);
      return pool.query(config as pg.QueryConfig) as never;
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

describePostgres('PostgreSQL round trips per request', (url) => {
  const sent: string[] = [];
  const schema = freshSchema('trips');
  let pool: pg.Pool;
  let vault: TestVault;
  let send: (method: string, path: string, key: string, body?: unknown) => Promise<{ status: number; body: any; statements: string[] }>;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: url, max: 4 });
    vault = await createTestVault({ store: createPostgresStore({ pool: countingPool(pool, sent), schema }), auditFlushMs: 60_000 });
    const handler = createFetchHandler(vault);
    send = async (method, path, key, body) => {
      sent.length = 0;
      const response = await handler(new Request(`http://vault${path}`, { method, headers: { 'svc-api-key': key, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }));
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
    const formula = await vault.formulas.create(admin, { name: 'last4', code: 'module.exports = async (req) => ({ raw: { last4: req.args.card.number.slice(-4) } });', configuration: [], request_parameters: [] });
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
      if (process.env.TOKENVAULT_PRINT_TRIPS) console.log(name, second.statements);
    }
    expect(counts).toEqual({ GET: 1, POST: 1, list: 1, search: 1, react: 3 });
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
});
