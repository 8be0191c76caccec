/**
 * The restore drill of docs/backups.md on both stores: write, back up while serving, write more,
 * restore, verify: the restored store opens with the master key and holds exactly the backed-up
 * tokens, which read back whole; the later ones are absent.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { PG_URL, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';
import { ADMIN_KEY, api, cli } from './helpers.js';

/** The data of the tokens written before the backup. */
const KEPT_DATA = ['kept-value-1', 'kept-value-2'];
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-drill-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await endAdmin();
});

/** Serves `store`, writes two tokens, backs up (while serving), writes two more; returns the ids. */
async function writeBackUpWriteMore(store: string[], env: Record<string, string>, backupTo: string) {
  const kept: string[] = [];
  const later: string[] = [];
  let backedUp = { code: -1, stdout: '', stderr: '' };
  const served = await cli(['serve', '--port', '0', '--access-log', 'off', ...store], env, async (url) => {
    const app = await api(url, ADMIN_KEY, 'POST', '/applications', {
      name: 'drill',
      type: 'private',
      permissions: ['token:create', 'token:read'],
      rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
    });
    for (const data of KEPT_DATA) kept.push((await api(url, app.body.key, 'POST', '/tokens', { type: 'token', data })).body.id);
    backedUp = await cli(['backup', backupTo, ...store.filter((flag) => flag !== '--shared-db')], env);
    for (const data of ['later-value-1', 'later-value-2']) later.push((await api(url, app.body.key, 'POST', '/tokens', { type: 'token', data })).body.id);
  });
  expect(served.code, served.stderr).toBe(0);
  expect(backedUp.code, backedUp.stderr).toBe(0);
  expect(backedUp.stdout).toMatch(new RegExp(`^wrote ${backupTo}: `));
  expect(backedUp.stdout).toMatch(/The master key is not in the backup/);
  // What the database holds, the backup holds: its owner's alone, on either store.
  expect(statSync(backupTo).mode & 0o777).toBe(0o600);
  expect(kept.every((id) => typeof id === 'string')).toBe(true);
  return { kept, later };
}

/** verify --json, then the tokens read back through a server on the restored store. */
async function expectExactly(store: string[], env: Record<string, string>, kept: string[], later: string[]) {
  const verified = await cli(['verify', '--json', ...store], env);
  expect(verified.code, verified.stderr).toBe(0);
  const report = JSON.parse(verified.stdout) as { tenants: { tokens: number; sampledIds: string[] }[] };
  expect(report.tenants).toHaveLength(1);
  expect(report.tenants[0]!.tokens).toBe(kept.length);
  expect([...report.tenants[0]!.sampledIds].sort()).toEqual([...kept].sort());
  const reads: number[] = [];
  const data: unknown[] = [];
  await cli(['serve', '--port', '0', '--access-log', 'off', ...store], env, async (url) => {
    const reader = await api(url, ADMIN_KEY, 'POST', '/applications', {
      name: 'reader',
      type: 'private',
      permissions: ['token:read'],
      rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:read'] }],
    });
    for (const id of [...kept, ...later]) {
      const read = await api(url, reader.body.key, 'GET', `/tokens/${id}`);
      reads.push(read.status);
      if (read.status === 200) data.push(read.body.data);
    }
  });
  expect(reads).toEqual([...kept.map(() => 200), ...later.map(() => 404)]);
  expect(data).toEqual(KEPT_DATA);
}

describe('the restore drill', () => {
  it('SQLite: an online backup while serving (--shared-db), restored to a new file with its key file beside it', async () => {
    const db = join(dir, 'live.db');
    const env = { TOKENVAULT_ADMIN_KEY: ADMIN_KEY };
    const backupFile = join(dir, 'live.backup');
    const { kept, later } = await writeBackUpWriteMore(['--db', db, '--shared-db'], env, backupFile);

    const restored = join(dir, 'restored.db');
    const result = await cli(['restore', backupFile, '--db', restored], env);
    expect(result.code, result.stderr).toBe(0);
    // The key travels separately: the operator puts it back beside the restored file.
    expect(existsSync(`${restored}.key`)).toBe(false);
    const keyless = await cli(['verify', '--db', restored], env);
    expect(keyless.code).toBe(1);
    expect(keyless.stderr).toMatch(/no master key for .*restored\.db/);
    copyFileSync(`${db}.key`, `${restored}.key`);
    await expectExactly(['--db', restored], env, kept, later);

    // A wrong key is refused by verify; a restore never replaces a database; backup never replaces a file.
    expect((await cli(['verify', '--db', restored], { TOKENVAULT_MASTER_KEY: generateMasterKey() })).stderr).toMatch(/master key does not match/);
    expect((await cli(['restore', backupFile, '--db', restored], env)).stderr).toMatch(/restored\.db exists/);
    expect((await cli(['backup', backupFile, '--db', db], env)).stderr).toMatch(/live\.backup exists/);
  });

  it('SQLite: a server holding the file alone (no --shared-db) makes backup say how to proceed', async () => {
    const db = join(dir, 'alone.db');
    let refused = { code: 0, stdout: '', stderr: '' };
    await cli(['serve', '--port', '0', '--db', db], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY }, async () => {
      refused = await cli(['backup', join(dir, 'alone.backup'), '--db', db], {});
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/holds it alone unless started with --shared-db/);
    expect(existsSync(join(dir, 'alone.backup'))).toBe(false);
  });

  it.skipIf(!PG_URL)('PostgreSQL: pg_dump while serving, the schema dropped, pg_restore, verify', async () => {
    const schema = freshSchema('drill');
    const env = { TOKENVAULT_ADMIN_KEY: ADMIN_KEY, TOKENVAULT_MASTER_KEY: generateMasterKey() };
    const store = ['--postgres', PG_URL!, '--postgres-schema', schema];
    const dump = join(dir, 'pg.dump');
    try {
      const { kept, later } = await writeBackUpWriteMore(store, env, dump);
      await dropSchema(schema);
      const result = await cli(['restore', dump, '--postgres', PG_URL!], env);
      expect(result.code, result.stderr).toBe(0);
      await expectExactly(store, env, kept, later);
      // A second restore onto the live schema fails clearly.
      const again = await cli(['restore', dump, '--postgres', PG_URL!], env);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/pg_restore failed: .*already exists/);
    } finally {
      await dropSchema(schema);
    }
  });
});
