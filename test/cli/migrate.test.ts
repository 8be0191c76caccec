/** `tokenvault migrate` says what it applied, in-process on both stores (store contract: migrate() answers the versions). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli.js';
import { MIGRATIONS as PG_MIGRATIONS, runMigrations as runPgMigrations } from '../../src/storage/postgres/migrations.js';
import { PgExecutor } from '../../src/storage/postgres/pg-executor.js';
import { MIGRATIONS as SQLITE_MIGRATIONS, runMigrations as runSqliteMigrations } from '../../src/storage/sqlite/migrations.js';
import { PG_URL, adminPool, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';

const dir = mkdtempSync(join(tmpdir(), 'tokenvault-migrate-'));
const schemas: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (PG_URL !== undefined) {
    for (const schema of schemas) await dropSchema(schema);
    await endAdmin();
  }
});

async function migrate(store: string[]): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  const code = await runCli(['migrate', ...store], { env: {}, stdout: (t) => (stdout += t), stderr: () => undefined });
  return { code, stdout };
}

interface Target {
  name: string;
  latest: number;
  /** A database holding the first `upTo` versions, and the flags naming it. */
  partly(upTo: number): Promise<string[]>;
}

const targets: Target[] = [
  {
    name: 'sqlite',
    latest: SQLITE_MIGRATIONS.length,
    async partly(upTo) {
      const file = join(dir, `partly-${upTo}.db`);
      const db = new Database(file);
      runSqliteMigrations(db, SQLITE_MIGRATIONS.slice(0, upTo));
      db.close();
      return ['--db', file];
    },
  },
  ...(PG_URL === undefined
    ? []
    : [
        {
          name: 'postgres',
          latest: PG_MIGRATIONS.length,
          async partly(upTo: number) {
            const schema = freshSchema('migrate');
            schemas.push(schema);
            const pool = adminPool();
            await runPgMigrations(new PgExecutor(pool), schema, PG_MIGRATIONS.slice(0, upTo));
            return ['--postgres', PG_URL!, '--postgres-schema', schema];
          },
        },
      ]),
];

describe.each(targets)('tokenvault migrate [$name]', (target) => {
  it('prints the versions it applied, then that there was nothing to apply', async () => {
    const n = target.latest;
    const store = await target.partly(n - 3);
    const first = await migrate(store);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(new RegExp(`: applied versions ${n - 2}-${n} \\(schema now at version ${n}\\)\\n$`));
    const again = await migrate(store);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`: schema already at version ${n}, nothing to apply\\n$`));
    const one = await target.partly(n - 1);
    expect((await migrate(one)).stdout).toMatch(new RegExp(`: applied version ${n} \\(schema now at version ${n}\\)\\n$`));
  });
});
