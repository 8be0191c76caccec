import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/postgres.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { SHARED_AREAS } from '../../src/storage/areas/index.js';
import { postgresDialect, sqliteDialect, type Dialect } from '../../src/storage/sql/dialect.js';
import type { Query } from '../../src/storage/sql/operation.js';
import type { Sql } from '../../src/storage/sql/sql.js';
import { quoteSchema } from '../../src/storage/postgres/postgres-options.js';
import { STORE_AREAS } from '../../src/storage/store-parts.js';
import { PG_URL, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';

// Every fixed statement of every shared area, rendered for each dialect and compiled by each
// database against the migrated schema: a statement one dialect cannot run fails here, before
// any behaviour test reaches it. (The behaviour is the conformance suite's.)
const named = (area: string, statements: Record<string, Sql> | undefined) => Object.entries(statements ?? {}).map(([name, sql]) => ({ id: `${area}.${name}`, sql }));
const statements = Object.entries(SHARED_AREAS).flatMap(([area, entry]) => named(area, entry.statements));
const writingWith = Object.entries(SHARED_AREAS).flatMap(([area, entry]) => named(area, 'writingWith' in entry ? entry.writingWith : undefined));

// The statements built per call (the caller's fields choose them): the widest of each, as its
// operation's body yields it first for `dialect`.
const shaped = (dialect: Dialect) => {
  const changes = { name: 'n', permissions: [], rules: [], allowedOrigins: [], modifiedBy: null, modifiedAt: 1 };
  const update = SHARED_AREAS.applications.operations.updateApplication.steps(dialect, 't', 'a', changes, undefined, { permissions: [], rules: [] }).next().value as Query;
  expect(update.shaped).toBe(true);
  return [{ id: 'applications.updateApplication (every field, guarded on permissions and rules)', sql: update.sql }];
};

describe('shared store areas', () => {
  it("each implements every method of its area, under the Store names, but those it names as each store's own", () => {
    for (const [area, entry] of Object.entries(SHARED_AREAS)) {
      const perStore: readonly string[] = 'perStore' in entry ? entry.perStore : [];
      expect(Object.keys(entry.operations).filter((name) => perStore.includes(name))).toEqual([]);
      expect([...Object.keys(entry.operations), ...perStore].sort()).toEqual([...STORE_AREAS[area as keyof typeof STORE_AREAS]].sort());
    }
  });

  it('every statement compiles on SQLite', async () => {
    expect(sqliteDialect.writingWith).toBe(false);
    const store = createSqliteStore();
    await store.migrate();
    for (const { id, sql } of [...statements, ...shaped(sqliteDialect)]) expect(() => store.database.prepare(sql.render(sqliteDialect).text), id).not.toThrow();
    await store.close();
  });

  describe.skipIf(PG_URL === undefined)('PostgreSQL', () => {
    afterAll(endAdmin);
    it('every statement compiles on PostgreSQL', async () => {
      const schema = freshSchema('statements');
      const store = createPostgresStore({ connectionString: PG_URL!, schema, max: 2 });
      try {
        await store.migrate();
        const dialect = postgresDialect(quoteSchema(schema));
        const client = await store.pool.connect();
        try {
          expect(dialect.writingWith).toBe(true);
          for (const { id, sql } of [...statements, ...writingWith, ...shaped(dialect)]) {
            // PREPARE parses, resolves and types the statement without running it.
            await expect(client.query({ text: `PREPARE check_statement AS ${sql.render(dialect).text}` }), id).resolves.toBeDefined();
            await client.query({ text: 'DEALLOCATE check_statement' });
          }
        } finally {
          client.release();
        }
      } finally {
        await store.close();
        await dropSchema(schema);
      }
    });
  });
});
