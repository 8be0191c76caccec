import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PgPool, type PgQueryConfig } from '../../src/postgres.js';
import { createFetchHandler } from '../../src/http/index.js';
import { MAX_NAMED_STATEMENTS, MAX_NAMED_SHAPED_STATEMENTS, StatementNames } from '../../src/storage/postgres/statement-names.js';
import { createTestVault } from '../../src/testing/index.js';
import { PG_SKIP_REASON, PG_URL, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';
import { observingPool } from '../support/tenant-statements.js';

/*
 * A process names at most MAX_NAMED_STATEMENTS statement texts, first come
 * first served. One tenant's list requests (metadata filters, ids, types, paging modes) shape the
 * text of a list statement; a few hundred distinct shapes must not take the names the store's own
 * statements need, or every other tenant's reads run unnamed (about 1.8x the database's CPU per
 * token read, docs/scaling.md "Prepared statements").
 */

/** A pg pool recording, for each statement text, the name it ran under (undefined: unnamed). */
function namingPool(connectionString: string): { pool: PgPool; names: Map<string, string | undefined> } {
  const names = new Map<string, string | undefined>();
  const pool = observingPool(connectionString, 2, (config: PgQueryConfig) => {
    if ((config.values?.length ?? 0) > 0) names.set(config.text, config.name);
  });
  return { pool, names };
}

describe('StatementNames budgets', () => {
  it('shaped texts have their own budget: past it they run unnamed, and a fixed text is still named after any number of them', () => {
    const names = new StatementNames();
    const shaped = Array.from({ length: 1000 }, (_, i) => names.of(`SELECT $1 /* shape ${i} */`, 'shaped'));
    expect(shaped.filter((n) => n !== undefined)).toHaveLength(MAX_NAMED_SHAPED_STATEMENTS);
    expect(shaped.slice(MAX_NAMED_SHAPED_STATEMENTS).every((n) => n === undefined)).toBe(true);
    const fixed = Array.from({ length: MAX_NAMED_STATEMENTS + 1 }, (_, i) => names.of(`SELECT $1 /* fixed ${i} */`));
    expect(fixed.slice(0, MAX_NAMED_STATEMENTS).every((n) => /^tokenvault_[0-9a-f]{40}$/.test(String(n)))).toBe(true);
    expect(fixed[MAX_NAMED_STATEMENTS]).toBeUndefined();
    // A named text keeps its name, whichever way it is asked for again.
    expect(names.of('SELECT $1 /* shape 0 */')).toBe(shaped[0]);
  });
});

describe.skipIf(PG_URL === undefined)(`PostgreSQL statement names under a flood of list shapes${PG_URL === undefined ? ` (${PG_SKIP_REASON})` : ''}`, () => {
  afterAll(endAdmin);

  it("one tenant's hundreds of distinct list shapes take no name from the store's own statements; the named texts stay bounded", async () => {
    const { pool, names } = namingPool(PG_URL!);
    const schema = freshSchema('slots');
    const vault = await createTestVault({ store: () => createPostgresStore({ pool, schema, preparedStatements: true }) });
    const handler = createFetchHandler(vault);
    try {
      const flooder = await vault.caller({ name: 'flooder', permissions: ['token:read', 'token:create', 'token:search'] });
      const other = await vault.caller({ name: 'other', permissions: ['token:read', 'token:create', 'token:delete'] });
      const token = await vault.tokens.create(other, { type: 'token', data: 'kept' });
      const get = async (key: string, path: string) => {
        const response = await handler(new Request(`http://vault${path}`, { headers: { 'SVC-API-KEY': key } }));
        expect(response.status, `${path}: ${await response.clone().text()}`).toBeLessThan(300);
        return response;
      };
      await get(other.key, `/tokens/${token.id}`);
      const before = new Set([...names].filter(([, name]) => name !== undefined).map(([text]) => text));

      // The flood: every combination of 0..5 metadata filters, 0/1/2 ids, 0/1/2 types, both modes.
      let shapes = 0;
      for (let filters = 0; filters <= 8; filters++) {
        for (const ids of [0, 1, 2]) {
          for (const types of [0, 1, 2]) {
            for (const mode of ['cursor', 'offset']) {
              const query = new URLSearchParams({ size: '2' });
              if (mode === 'offset') query.set('page', '1');
              for (let i = 0; i < filters; i++) query.set(`metadata.k${i}`, `v${shapes}`);
              for (let i = 0; i < ids; i++) query.append('id', `tok_${'0'.repeat(20)}${i}`);
              for (let i = 0; i < types; i++) query.append('type', ['token', 'card'][i]!);
              await get(flooder.key, `/tokens?${query}`);
              shapes++;
            }
          }
        }
      }
      // And searches: metadata terms, data terms (blind indexes), a container, a fingerprint.
      const post = async (key: string, path: string, body: unknown) => {
        const response = await handler(
          new Request(`http://vault${path}`, { method: 'POST', headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' }, body: JSON.stringify(body) }),
        );
        expect(response.status, `${path}: ${await response.clone().text()}`).toBeLessThan(300);
      };
      for (let filters = 0; filters <= 4; filters++) {
        for (const data of [0, 1, 2, 3]) {
          for (const extra of ['', 'container:/a/', 'fingerprint:f', 'container:/a/ fingerprint:f']) {
            for (const mode of ['cursor', 'offset', 'id:x cursor', 'id:x offset']) {
              const terms = [
                mode.startsWith('id') ? 'id:x' : '',
                ...Array.from({ length: filters }, (_, i) => `metadata.k${i}:v`),
                ...Array.from({ length: data }, (_, i) => `data:d${i}`),
                extra,
                'type:token',
              ];
              await post(flooder.key, '/tokens/search', { query: terms.filter(Boolean).join(' '), size: 2, ...(mode.endsWith('offset') ? { page: 1 } : {}) });
              shapes++;
            }
          }
        }
      }
      const texts = [...names].filter(([text]) => !before.has(text) && /\.tokens t\b/.test(text) && text.startsWith('SELECT'));
      // The probe is real: the tenant made more distinct statement texts than the store names.
      expect(shapes).toBeGreaterThan(MAX_NAMED_STATEMENTS);
      // The lean PostgreSQL layout matches any number of metadata terms, ids or types with one array
      // each, so these requests make only tens of texts; the budget itself is the unit test above.
      expect(new Set(texts.map(([text]) => text)).size).toBeGreaterThan(16);
      // Caller-shaped texts draw on their own, smaller set of names.
      expect(texts.filter(([, name]) => name !== undefined).length).toBeLessThanOrEqual(MAX_NAMED_SHAPED_STATEMENTS);

      // The other tenant's work after the flood, with statements this process had not run yet
      // (deleting a token, reading a deleted one): still named.
      const response = await handler(new Request(`http://vault/tokens/${token.id}`, { method: 'DELETE', headers: { 'SVC-API-KEY': other.key } }));
      expect(response.status).toBe(204);
      const after = await handler(new Request(`http://vault/tokens/${token.id}`, { headers: { 'SVC-API-KEY': other.key } }));
      expect(after.status).toBe(404);
      const late = [...names].filter(([text]) => !before.has(text) && !texts.some(([t]) => t === text));
      expect(late.length).toBeGreaterThan(0);
      for (const [text, name] of late) expect(String(name), text.slice(0, 120)).toMatch(/^tokenvault_/);
    } finally {
      await vault.close();
      await dropSchema(schema);
    }
  });
});
