// The lean token layout migration, on a database written by the version before it (old layout,
// generated in bulk: test/support/legacy-tokens.ts), on SQLite and on PostgreSQL. TOKENVAULT_MIGRATION_TOKENS sets the size:
// the suite runs 1,000 tokens (every one compared); `npm run bench:migration` runs 200,000 (a
// deterministic sample compared field by field, every list, search and filter compared in full).
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/cli/migrate.js';
import { ManualClock } from '../../src/common/clock.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { createPostgresStore, type PgPool } from '../../src/postgres.js';
import { MIGRATIONS as PG_MIGRATIONS, runMigrations as runPgMigrations } from '../../src/storage/postgres/migrations.js';
import { LEAN_TOKENS_MIGRATION as PG_LEAN_TOKENS_MIGRATION } from '../../src/storage/postgres/migration-lean-tokens.js';
import { PgExecutor } from '../../src/storage/postgres/pg-executor.js';
import { pairDigest } from '../../src/storage/postgres/token-rows.js';
import { adminPool, dropSchema, freshSchema } from '../support/postgres.js';
import { describePostgres } from '../support/stores.js';
import { migrationProgressLines, type MigrationProgressLine } from '../../src/storage/migration-progress.js';
import { MIGRATIONS, runMigrations } from '../../src/storage/sqlite/migrations.js';
import { LEAN_TOKENS_MIGRATION } from '../../src/storage/sqlite/migration-lean-tokens.js';
import type { MigrationProgress, Store, StoredToken, TokenFilter } from '../../src/storage/store.js';
import { LEGACY_COLUMNS, LEGACY_NOW, LEGACY_TENANTS, isLive, legacyDeleted, legacyRow, legacyToken, pairsOf } from '../support/legacy-tokens.js';

const TOKENS = Number(process.env['TOKENVAULT_MIGRATION_TOKENS'] ?? 1000);
const DELETED = Math.max(3, Math.floor(TOKENS / 1000));
/** What `tokenvault migrate` prints having applied versions `first` to `last` (the migrations after this one too). */
const appliedFrom = (first: number, last: number) => (first === last ? `applied version ${first}` : `applied versions ${first}-${last}`);
const BEFORE = MIGRATIONS.indexOf(LEAN_TOKENS_MIGRATION);

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
const tempFile = () => {
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-lean-'));
  dirs.push(dir);
  return join(dir, 'old.db');
};

/** A SQLite database at the version before the lean layout, holding TOKENS tokens written as that version wrote them. */
function oldSqliteDatabase(filename: string): Database.Database {
  const db = new Database(filename);
  db.pragma('journal_mode = WAL');
  runMigrations(db, MIGRATIONS.slice(0, BEFORE));
  // The third tenant has tokens but no tenants row (the store never required one).
  const tenant = db.prepare('INSERT INTO tenants (id, name, created_at) VALUES (?, ?, 0)');
  const token = db.prepare(
    `INSERT INTO tokens (${LEGACY_COLUMNS}) VALUES (${LEGACY_COLUMNS.split(',')
      .map(() => '?')
      .join(', ')})`,
  );
  const pair = db.prepare('INSERT INTO token_metadata (token_seq, tenant_id, key_lower, value_lower) VALUES (?, ?, ?, ?)');
  const hash = db.prepare('INSERT INTO token_search (token_seq, tenant_id, hash) VALUES (?, ?, ?)');
  const deleted = db.prepare('INSERT INTO deleted_tokens (tenant_id, id, type, deleted_at, deleted_by) VALUES (?, ?, ?, ?, ?)');
  db.transaction(() => {
    tenant.run(LEGACY_TENANTS[0], 'a');
    tenant.run(LEGACY_TENANTS[1], 'b');
    for (let i = 0; i < TOKENS; i++) {
      const t = legacyToken(i);
      token.run(...legacyRow(t).map((v) => (typeof v === 'boolean' ? Number(v) : v)));
      for (const [key, value] of pairsOf(t)) pair.run(t.seq, t.tenantId, key, value);
      for (const h of new Set(t.searchHashes)) hash.run(t.seq, t.tenantId, h);
    }
    for (let i = 0; i < DELETED; i++) {
      const d = legacyDeleted(i);
      deleted.run(d.tenantId, d.id, d.type, d.deletedAt, d.deletedBy);
    }
  })();
  return db;
}

const strip = ({ seq: _seq, ...token }: StoredToken & { seq: number }): StoredToken => token;

async function listAll(store: Store, tenantId: string, filter: TokenFilter): Promise<string[]> {
  const ids: string[] = [];
  let start: string | undefined;
  do {
    const page = await store.listTokens(tenantId, filter, { mode: 'cursor', size: 1000, ...(start === undefined ? {} : { start }) }, LEGACY_NOW);
    if (page.mode !== 'cursor') throw new Error('cursor page expected');
    ids.push(...page.items.map((t) => t.id));
    start = page.next ?? undefined;
  } while (start !== undefined);
  return ids;
}

const FILTERS: [string, TokenFilter, (t: StoredToken) => boolean][] = [
  ['no filter', {}, () => true],
  ['a metadata pair, any case', { metadata: { CUSTOMER: 'c5' } }, (t) => pairsOf(t).some(([k, v]) => k === 'customer' && v === 'c5')],
  [
    'two metadata pairs',
    { metadata: { customer: 'c3', Plan: 'GOLD' } },
    (t) => pairsOf(t).some(([k, v]) => k === 'customer' && v === 'c3') && pairsOf(t).some(([k, v]) => k === 'plan' && v === 'gold'),
  ],
  ['a search hash', { searchHashes: [legacyToken(7).searchHashes[0]!] }, (t) => t.searchHashes.includes(legacyToken(7).searchHashes[0]!)],
  ['a search value that is not a hash', { searchHashes: ['not-a-hash'] }, (t) => t.searchHashes.includes('not-a-hash')],
  ['a fingerprint', { fingerprints: [legacyToken(42).fingerprint!] }, (t) => t.fingerprint === legacyToken(42).fingerprint],
  ['a text fingerprint', { fingerprints: [legacyToken(97).fingerprint!] }, (t) => t.fingerprint === legacyToken(97).fingerprint],
  ['one type', { types: ['bank'] }, (t) => t.type === 'bank'],
  [
    'two types and a pair',
    { types: ['card', 'token'], metadata: { customer: 'c1' } },
    (t) => ['card', 'token'].includes(t.type) && pairsOf(t).some(([k, v]) => k === 'customer' && v === 'c1'),
  ],
  ['a container', { containers: ['/extra/'] }, (t) => t.containers.includes('/extra/')],
  ['a default container', { containers: ['/bank/high/'] }, (t) => t.containers.includes('/bank/high/')],
  ['access scopes', { within: [{ prefix: '/pci/', except: ['/pci/low/'] }] }, (t) => t.containers.every((c) => c.startsWith('/pci/') && !c.startsWith('/pci/low/'))],
  ['ids', { ids: [legacyToken(3).id, legacyToken(6).id, legacyToken(9).id] }, (t) => [legacyToken(3).id, legacyToken(6).id, legacyToken(9).id].includes(t.id)],
];

/** Every token (or, past 5,000, a deterministic sample) reads back as written; every list, search and filter answers the same tokens. */
async function expectSameTokens(store: Store): Promise<void> {
  const all = Array.from({ length: TOKENS }, (_, i) => legacyToken(i));
  const sample = TOKENS <= 5000 ? all : all.filter((t) => t.seq % 97 === 0 || t.seq <= 100 || t.seq > TOKENS - 100);
  for (const token of sample) {
    expect(await store.getToken(token.tenantId, token.id, LEGACY_NOW), token.id).toEqual(isLive(token) ? strip(token) : null);
  }
  for (const tenantId of LEGACY_TENANTS) {
    const mine = all.filter((t) => t.tenantId === tenantId && isLive(t));
    for (const [name, filter, matches] of FILTERS) {
      expect(await listAll(store, tenantId, filter), `${tenantId}: ${name}`).toEqual(mine.filter(matches).map((t) => t.id));
    }
  }
  for (let i = 0; i < DELETED; i++) {
    const d = legacyDeleted(i);
    expect(await store.getDeletedToken(d.tenantId, d.id)).toEqual(d);
  }
  const due = all
    .filter((t) => t.cvcPurgeAt !== null)
    .sort((a, b) => a.cvcPurgeAt! - b.cvcPurgeAt! || (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.id < b.id ? -1 : 1));
  expect((await store.listCvcDue(LEGACY_NOW + 10_000_000, 100)).map((t) => t.id)).toEqual(due.slice(0, 100).map((t) => t.id));
  expect(await store.countTokensBelowKeyVersion(LEGACY_TENANTS[1]!, 2)).toBe(all.filter((t) => t.tenantId === LEGACY_TENANTS[1] && t.keyVersion < 2).length);
}

describe('the lean token layout migration (SQLite)', () => {
  it(`rewrites a database of the version before in place (${TOKENS} tokens): each reads back the same, through every list, search and filter`, async () => {
    const db = oldSqliteDatabase(tempFile());
    const store = createSqliteStore({ database: db });
    const reports: MigrationProgress[] = [];
    const outcome = await store.migrate({ onProgress: (progress) => reports.push(progress), batchSize: Math.ceil(TOKENS / 4) });
    expect(outcome.applied).toContain(BEFORE + 1);
    // One report per batch, counting up to every token.
    expect(reports.map((r) => r.done)).toEqual([...reports.map((r) => r.done)].sort((a, b) => a - b));
    expect(reports.at(-1)).toEqual({ version: BEFORE + 1, table: 'tokens', done: TOKENS, total: TOKENS });
    expect(reports.length).toBeGreaterThanOrEqual(4);
    const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    const all = Array.from({ length: TOKENS }, (_, i) => legacyToken(i));
    expect(count('SELECT count(*) AS n FROM tokens')).toBe(TOKENS);
    expect(count('SELECT count(*) AS n FROM token_metadata')).toBe(all.reduce((n, t) => n + pairsOf(t).length, 0));
    expect(count('SELECT count(*) AS n FROM token_search')).toBe(all.reduce((n, t) => n + new Set(t.searchHashes).size, 0));
    expect(count("SELECT count(*) AS n FROM sqlite_master WHERE name IN ('tokens_next', 'schema_migration_progress', 'tokens_tenant_type_seq')")).toBe(0);
    await expectSameTokens(store);
    // The idempotency triggers follow the new table: deleting a token still withdraws the responses that carry it.
    const first = legacyToken(1);
    db.prepare(
      "INSERT INTO idempotency_keys (tenant_id, application_id, key, request_hash, state, status, body, created_at, expires_at) VALUES (?, 'app', 'k', 'h', 'done', 200, x'00', 1, 9e15)",
    ).run(first.tenantId);
    db.prepare("INSERT INTO idempotency_tokens (tenant_id, token_id, application_id, key, created_at) VALUES (?, ?, 'app', 'k', 1)").run(first.tenantId, first.id);
    const audit = { tenantId: first.tenantId, actor: 'app', operation: 'token:delete', resourceId: first.id, outcome: 'success' as const, detail: null, at: LEGACY_NOW };
    expect(await store.deleteToken(first.tenantId, first.id, 'app', audit, LEGACY_NOW)).toBe(true);
    expect(db.prepare('SELECT state FROM idempotency_keys').get()).toEqual({ state: 'withdrawn' });
    await store.close();
    db.close();
  }, 600_000);

  it('a migration killed midway (SIGKILL after a batch) resumes where it stopped when the store opens again, and finishes', async () => {
    const filename = tempFile();
    oldSqliteDatabase(filename).close();
    const batch = Math.ceil(TOKENS / 6);
    const child = spawnSync(process.execPath, ['--import', 'tsx', 'test/support/migrate-and-die.ts', String(batch), String(2 * batch), 'sqlite', filename], { encoding: 'utf8' });
    expect(child.signal).toBe('SIGKILL');
    expect(child.stdout).not.toContain('finished');
    const db = new Database(filename);
    expect(db.prepare('SELECT done FROM schema_migration_progress').get()).toEqual({ done: 2 * batch });
    expect((db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number }).v).toBe(BEFORE);
    db.close();

    const store = createSqliteStore({ filename });
    const reports: MigrationProgress[] = [];
    expect((await store.migrate({ onProgress: (progress) => reports.push(progress), batchSize: batch })).applied).toContain(BEFORE + 1);
    // It went on from the third batch: the two committed before the kill are not copied again.
    expect(reports[0]!.done).toBe(3 * batch);
    expect(reports.at(-1)!.done).toBe(TOKENS);
    await expectSameTokens(store);
    await store.close();
  }, 600_000);

  it('tokenvault migrate reports on stderr how many rows, how far and the time left, then the outcome', async () => {
    const filename = tempFile();
    oldSqliteDatabase(filename).close();
    const out: string[] = [];
    const err: string[] = [];
    expect(await migrate(['--db', filename], { env: {}, stdout: (t) => out.push(t), stderr: (t) => err.push(t) })).toBe(0);
    expect(err.at(-1)).toBe(`migration ${BEFORE + 1}: tokens ${TOKENS} of ${TOKENS} rows rewritten (100%), done\n`);
    expect(out.join('')).toMatch(new RegExp(`${appliedFrom(BEFORE + 1, MIGRATIONS.length)} \\(schema now at version ${MIGRATIONS.length}\\)`));
  });
});

describe('migration progress lines', () => {
  it('estimate the time left from the rate of this run, not counting rows an earlier run did', () => {
    const clock = new ManualClock(1_000_000);
    const lines: MigrationProgressLine[] = [];
    const report = migrationProgressLines(clock, (line) => lines.push(line));
    report({ version: 16, table: 'tokens', done: 50_000, total: 200_000 });
    clock.advance(2_000);
    report({ version: 16, table: 'tokens', done: 60_000, total: 200_000 });
    expect(lines.map((l) => l.message)).toEqual([
      'migration 16: tokens 50000 of 200000 rows rewritten (25%), estimating time left',
      'migration 16: tokens 60000 of 200000 rows rewritten (30%), about 28 s left',
    ]);
    expect(lines[1]!.fields).toEqual({ version: 16, table: 'tokens', done: 60_000, total: 200_000, percent: 30, secondsLeft: 28 });
  });
});

const PG_BEFORE = PG_MIGRATIONS.indexOf(PG_LEAN_TOKENS_MIGRATION);
const PG_TYPES = ['int8', 'text', 'text', 'text', 'bytea', 'int4', 'text', 'text', 'json', 'jsonb', 'json', 'json', 'json', 'bool', 'text', 'int8', 'text', 'int8', 'int8', 'int8'];

/** A PostgreSQL schema at the version before the lean layout, holding TOKENS tokens written as that version wrote them. */
async function oldPostgresSchema(schema: string): Promise<void> {
  const db = adminPool();
  await runPgMigrations(new PgExecutor(db as unknown as PgPool), schema, PG_MIGRATIONS.slice(0, PG_BEFORE));
  const s = `"${schema}"`;
  await db.query(`INSERT INTO ${s}.tenants (id, name, created_at) VALUES ($1, 'a', 0), ($2, 'b', 0)`, [LEGACY_TENANTS[0], LEGACY_TENANTS[1]]);
  const tokens = Array.from({ length: TOKENS }, (_, i) => legacyToken(i));
  for (let from = 0; from < TOKENS; from += 5000) {
    const chunk = tokens.slice(from, from + 5000);
    const columns: unknown[][] = PG_TYPES.map(() => []);
    for (const t of chunk) legacyRow(t).forEach((value, c) => columns[c]!.push(value));
    await db.query(`INSERT INTO ${s}.token_ids (tenant_id, id) SELECT * FROM unnest($1::text[], $2::text[])`, [columns[1], columns[2]]);
    await db.query(
      `INSERT INTO ${s}.tokens (${LEGACY_COLUMNS}) OVERRIDING SYSTEM VALUE SELECT * FROM unnest(${PG_TYPES.map((type, i) => `$${i + 1}::${type}[]`).join(', ')})`,
      columns,
    );
    const pairs: [number[], string[], Buffer[]] = [[], [], []];
    const hashes: [number[], string[], string[]] = [[], [], []];
    for (const t of chunk) {
      for (const [key, value] of pairsOf(t)) (pairs[0].push(t.seq), pairs[1].push(t.tenantId), pairs[2].push(pairDigest(key, value)));
      for (const h of new Set(t.searchHashes)) (hashes[0].push(t.seq), hashes[1].push(t.tenantId), hashes[2].push(h));
    }
    await db.query(`INSERT INTO ${s}.token_metadata (token_seq, tenant_id, pair) SELECT * FROM unnest($1::int8[], $2::text[], $3::bytea[])`, pairs);
    await db.query(`INSERT INTO ${s}.token_search (token_seq, tenant_id, hash) SELECT * FROM unnest($1::int8[], $2::text[], $3::text[])`, hashes);
  }
  for (let i = 0; i < DELETED; i++) {
    const d = legacyDeleted(i);
    await db.query(`INSERT INTO ${s}.token_ids (tenant_id, id, type, deleted_at, deleted_by) VALUES ($1, $2, $3, $4, $5)`, [d.tenantId, d.id, d.type, d.deletedAt, d.deletedBy]);
  }
  await db.query(`SELECT setval(pg_get_serial_sequence('${s}.tokens', 'seq'), $1)`, [TOKENS + 10]);
}

describePostgres('the lean token layout migration (PostgreSQL)', (url) => {
  const schemas: string[] = [];
  afterAll(() => Promise.all(schemas.map(dropSchema)));
  const schemaFor = (label: string) => {
    const schema = freshSchema(label);
    schemas.push(schema);
    return schema;
  };
  const count = async (sql: string) => Number((await adminPool().query(sql)).rows[0].n);

  it(`rewrites a schema of the version before in place (${TOKENS} tokens): each reads back the same, through every list, search and filter`, async () => {
    const schema = schemaFor('lean');
    await oldPostgresSchema(schema);
    const s = `"${schema}"`;
    const store = createPostgresStore({ connectionString: url, schema, max: 2 });
    try {
      const reports: MigrationProgress[] = [];
      const outcome = await store.migrate({ onProgress: (progress) => reports.push(progress), batchSize: Math.ceil(TOKENS / 4) });
      expect(outcome.applied).toContain(PG_BEFORE + 1);
      expect(reports.map((r) => r.done)).toEqual([...reports.map((r) => r.done)].sort((a, b) => a - b));
      expect(reports.at(-1)).toEqual({ version: PG_BEFORE + 1, table: 'tokens', done: TOKENS, total: TOKENS });
      expect(reports.length).toBeGreaterThanOrEqual(4);
      expect(await count(`SELECT count(*) AS n FROM ${s}.tokens WHERE deleted_at IS NULL`)).toBe(TOKENS);
      expect(await count(`SELECT count(*) AS n FROM ${s}.tokens WHERE deleted_at IS NOT NULL`)).toBe(DELETED);
      const gone = ['token_ids', 'token_metadata', 'token_search', 'tokens_next', 'tokenvault_migrations_progress'];
      expect(await count(`SELECT count(*) AS n FROM pg_tables WHERE schemaname = '${schema}' AND tablename = ANY('{${gone.join(',')}}')`)).toBe(0);
      await expectSameTokens(store);
      // A new token continues the old sequence, and an id a deleted token had stays taken.
      const next = { ...strip(legacyToken(TOKENS)), id: 'after-the-migration', tenantId: LEGACY_TENANTS[0]! };
      expect(await store.createToken(next, LEGACY_NOW)).toEqual({ status: 'created' });
      expect(await count(`SELECT seq AS n FROM ${s}.tokens WHERE id = 'after-the-migration'`)).toBeGreaterThan(TOKENS + 10);
      const taken = legacyDeleted(0);
      expect(await store.createToken({ ...next, id: taken.id, tenantId: taken.tenantId }, LEGACY_NOW)).toEqual({ status: 'id_conflict' });
      // The idempotency triggers follow the new table: deleting a token still withdraws the responses that carry it.
      const first = legacyToken(1);
      await adminPool().query(
        `INSERT INTO ${s}.idempotency_keys (tenant_id, application_id, key, request_hash, state, status, body, created_at, expires_at) VALUES ($1, 'app', 'k', 'h', 'done', 200, '\\x00', 1, 9e15)`,
        [first.tenantId],
      );
      await adminPool().query(`INSERT INTO ${s}.idempotency_tokens (tenant_id, token_id, application_id, key, created_at) VALUES ($1, $2, 'app', 'k', 1)`, [
        first.tenantId,
        first.id,
      ]);
      const audit = { tenantId: first.tenantId, actor: 'app', operation: 'token:delete', resourceId: first.id, outcome: 'success' as const, detail: null, at: LEGACY_NOW };
      expect(await store.deleteToken(first.tenantId, first.id, 'app', audit, LEGACY_NOW)).toBe(true);
      expect((await adminPool().query(`SELECT state FROM ${s}.idempotency_keys`)).rows).toEqual([{ state: 'withdrawn' }]);
    } finally {
      await store.close();
    }
  }, 600_000);

  it('a migration killed midway (SIGKILL after a batch) resumes where it stopped when the store migrates again, and finishes', async () => {
    const schema = schemaFor('lean_kill');
    await oldPostgresSchema(schema);
    const batch = Math.ceil(TOKENS / 6);
    const child = spawnSync(process.execPath, ['--import', 'tsx', 'test/support/migrate-and-die.ts', String(batch), String(2 * batch), 'postgres', url, schema], {
      encoding: 'utf8',
    });
    expect(child.stderr).toBe('');
    expect(child.signal).toBe('SIGKILL');
    expect(child.stdout).not.toContain('finished');
    const s = `"${schema}"`;
    expect(await count(`SELECT done AS n FROM ${s}.tokenvault_migrations_progress`)).toBe(2 * batch);
    expect(await count(`SELECT max(version) AS n FROM ${s}.tokenvault_migrations`)).toBe(PG_BEFORE);

    const store = createPostgresStore({ connectionString: url, schema, max: 2 });
    try {
      const reports: MigrationProgress[] = [];
      expect((await store.migrate({ onProgress: (progress) => reports.push(progress), batchSize: batch })).applied).toContain(PG_BEFORE + 1);
      // It went on from the third batch: the two committed before the kill are not copied again.
      expect(reports[0]!.done).toBe(3 * batch);
      expect(reports.at(-1)!.done).toBe(TOKENS);
      await expectSameTokens(store);
    } finally {
      await store.close();
    }
  }, 600_000);

  it('tokenvault migrate reports on stderr how many rows, how far and the time left, then the outcome', async () => {
    const schema = schemaFor('lean_cli');
    await oldPostgresSchema(schema);
    const out: string[] = [];
    const err: string[] = [];
    expect(await migrate(['--postgres', url, '--postgres-schema', schema], { env: {}, stdout: (t) => out.push(t), stderr: (t) => err.push(t) })).toBe(0);
    expect(err.at(-1)).toBe(`migration ${PG_BEFORE + 1}: tokens ${TOKENS} of ${TOKENS} rows rewritten (100%), done\n`);
    expect(out.join('')).toMatch(new RegExp(`${appliedFrom(PG_BEFORE + 1, PG_MIGRATIONS.length)} \\(schema now at version ${PG_MIGRATIONS.length}\\)`));
  }, 600_000);
});
