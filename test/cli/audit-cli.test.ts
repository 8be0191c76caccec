/**
 * `tokenvault audit verify` and `tokenvault audit export` (docs/audit.md), in-process on both
 * stores: verify exits 0 on an intact trail and 1 naming the entry once a row was changed; the
 * entries written before the chain are said to be its unverified prefix; the export is JSON lines
 * that carry no token data.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli.js';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { createVault } from '../../src/index.js';
import { createPostgresStore } from '../../src/postgres.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { MIGRATIONS as SQLITE_MIGRATIONS, runMigrations as runSqliteMigrations } from '../../src/storage/sqlite/migrations.js';
import type { Store } from '../../src/storage/store.js';
import { PG_URL, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';
import { selected } from '../support/store-selection.js';
import { ALL_TOKEN_PERMISSIONS, REVEAL_ALL } from '../support/tokens.js';

const dir = mkdtempSync(join(tmpdir(), 'tokenvault-audit-cli-'));
const schemas: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (PG_URL !== undefined) {
    for (const schema of schemas) await dropSchema(schema);
    await endAdmin();
  }
});

const CARD = '4111111111111111';

async function cli(args: string[], masterKey: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { env: { TOKENVAULT_MASTER_KEY: masterKey }, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

/** A vault's worth of entries: a card created, read, updated and deleted. */
async function workload(store: Store, masterKey: string, options: { sweep?: boolean } = {}): Promise<void> {
  const vault = await createVault({ store, masterKey, sweepIntervalMs: 0 });
  const { application } = await vault.createTenant({ name: 'cli' });
  const admin = await vault.authenticate(application.key);
  const app = await vault.applications.create(admin, { name: 'w', type: 'private', permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL });
  const caller = await vault.authenticate(app.key!);
  const token = await vault.tokens.create(caller, { type: 'card', data: { number: CARD, expiration_month: 1, expiration_year: 2032 } });
  await vault.tokens.get(caller, token.id);
  await vault.tokens.update(caller, token.id, { metadata: { note: 'x' } });
  await vault.tokens.delete(caller, token.id);
  if (options.sweep === true) await vault.sweep();
  await vault.close();
}

interface Target {
  name: 'sqlite' | 'postgres';
  flags: string[];
  store(): Store;
  /** Runs SQL on the database as someone with access (guards off) would. */
  tamper(sql: string): Promise<void>;
}

function sqliteTarget(file: string): Target {
  return {
    name: 'sqlite',
    flags: ['--db', file],
    store: () => createSqliteStore({ filename: file }),
    async tamper(sql) {
      const db = new Database(file);
      db.exec('DROP TRIGGER IF EXISTS audit_log_seal_only');
      db.exec(sql);
      db.close();
    },
  };
}

function postgresTarget(url: string): Target {
  const schema = freshSchema('audit_cli');
  schemas.push(schema);
  return {
    name: 'postgres',
    flags: ['--postgres', url, '--postgres-schema', schema],
    store: () => createPostgresStore({ connectionString: url, schema, max: 2 }),
    async tamper(sql) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`SET search_path TO "${schema}"; ALTER TABLE audit_log DISABLE TRIGGER USER; ${sql}`);
      await client.end();
    },
  };
}

const targets: (() => Target)[] = [];
if (selected('sqlite')) targets.push(() => sqliteTarget(join(dir, 'vault.db')));
if (PG_URL !== undefined) targets.push(() => postgresTarget(PG_URL!));

describe.each(targets.map((make) => [make().name, make] as const))('tokenvault audit [%s]', (_name, make) => {
  it('verify exits 0 on an intact trail and 1 naming the entry changed; export writes JSON lines without token data', async () => {
    const target = make();
    const masterKey = generateMasterKey();
    await workload(target.store(), masterKey);
    const intact = await cli(['audit', 'verify', ...target.flags], masterKey);
    expect(intact.stderr).toBe('');
    expect(intact.code).toBe(0);
    expect(intact.stdout).toMatch(/^tenant \S+: intact; \d+ entries verified; head #\d+ [0-9a-f]{64}\n$/);

    const exported = await cli(['audit', 'export', '--since', '2000-01-01T00:00:00Z', ...target.flags], masterKey);
    expect(exported.code).toBe(0);
    const lines = exported.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((l) => l['operation'])).toEqual(expect.arrayContaining(['token:create', 'token:read', 'token:update', 'token:delete']));
    expect(lines.every((l) => typeof l['chain_hash'] === 'string' && typeof l['at'] === 'string')).toBe(true);
    // Each sealed batch's last entry carries the MAC.
    expect(lines.at(-1)!['chain_mac']).toMatch(/^[0-9a-f]{64}$/);
    expect(exported.stdout.includes(CARD), 'card number in the export').toBe(false);
    expect(exported.stderr).toBe(`exported ${lines.length} audit entries\n`);
    const future = await cli(['audit', 'export', '--since', '2999-01-01', ...target.flags], masterKey);
    expect(future).toMatchObject({ code: 0, stdout: '' });

    await target.tamper("UPDATE audit_log SET outcome = 'failure' WHERE chain_index = 2");
    const broken = await cli(['audit', 'verify', ...target.flags], masterKey);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(/BROKEN: entry #2 \(seq \d+\) was changed/);
    const json = await cli(['audit', 'verify', '--json', ...target.flags], masterKey);
    expect(JSON.parse(json.stdout.split('\n')[0]!)).toMatchObject({ broken: { kind: 'changed', index: 2 } });

    // Every seal cleared and the head's boundary of the entries older than the chain raised past
    // the last entry: once read as an unverified prefix with exit 0, now a head break.
    await target.tamper(
      'UPDATE audit_log SET chain_index = NULL, chain_hash = NULL, chain_mac = NULL; UPDATE audit_heads SET chain_index = 0, chain_hash = NULL, legacy_through = 1000000',
    );
    const hidden = await cli(['audit', 'verify', ...target.flags], masterKey);
    expect(hidden.code).toBe(1);
    expect(hidden.stdout).toMatch(/BROKEN: the chain head marks entries up to seq 1000000 as older than the chain, and no sealed entry vouches for that/);
  });

  it('refuses a bad invocation in its own words, changing nothing', async () => {
    const target = make();
    const masterKey = generateMasterKey();
    for (const [args, message] of [
      [['audit'], "'audit' needs a subcommand: verify or export"],
      [['audit', 'sign'], "unknown subcommand 'audit sign'"],
      [['audit', 'export', ...target.flags], "'audit export' needs --since <time>"],
      [['audit', 'export', '--since', 'yesterday', ...target.flags], '--since must be an ISO 8601 time'],
      [['audit', 'verify', '--pending-grace', 'soon', ...target.flags], '--pending-grace must be a whole number'],
    ] as const) {
      const result = await cli([...args], masterKey);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(message);
    }
  });
});

describe.runIf(selected('sqlite'))('tokenvault audit verify on a database older than the chain', () => {
  it('says plainly that the entries written before the migration are unverified, and verifies the rest', async () => {
    const file = join(dir, 'old.db');
    const old = new Database(file);
    old.pragma('journal_mode = WAL');
    runSqliteMigrations(old, SQLITE_MIGRATIONS.slice(0, 15));
    const insert = old.prepare(
      "INSERT INTO audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at) VALUES ('t_old', 'app', 'token:read', 'tok', 'success', NULL, 1)",
    );
    for (let i = 0; i < 3; i++) insert.run();
    old.close();
    const masterKey = generateMasterKey();
    await workload(createSqliteStore({ filename: file }), masterKey);
    // No vault has sealed that tenant's boundary yet: nothing tells it from a boundary raised by hand.
    const unsealed = await cli(['audit', 'verify', '--db', file], masterKey);
    expect(unsealed.code).toBe(1);
    expect(unsealed.stdout).toContain('tenant t_old: BROKEN: the chain head marks entries up to seq 3 as older than the chain, and no sealed entry vouches for that');
    // A vault's sweep seals it, in a chain-start entry.
    await workload(createSqliteStore({ filename: file }), masterKey, { sweep: true });
    const result = await cli(['audit', 'verify', '--db', file], masterKey);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /tenant t_old: intact; 1 entries verified; 3 entries written before the chain existed are not verified \(its unverified prefix\); head #1 [0-9a-f]{64}\n/,
    );
    expect(result.stdout).toMatch(/tenant (?!t_old)\S+: intact; \d+ entries verified; head #\d+/);
  });
});
