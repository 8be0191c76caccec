/**
 * The first start's admin key goes to a 0600 file whose path is printed, never to stdout, unless
 * asked (--print-admin-key); the key in the file authenticates (README, Quick start).
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli.js';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { PG_URL, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-admin-key-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await endAdmin();
});

/** Serves in-process; `whileUp` runs against the listening URL, then the server stops. */
async function serve(argv: string[], env: Record<string, string> = {}, whileUp: (url: string) => Promise<void> = async () => undefined) {
  const controller = new AbortController();
  let stdout = '';
  let stderr = '';
  let failure: unknown;
  const code = await runCli(['serve', '--port', '0', ...argv], {
    env,
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    signal: controller.signal,
    onListening: (url) => {
      whileUp(url)
        .catch((error: unknown) => (failure = error))
        .finally(() => controller.abort());
    },
  });
  if (failure) throw failure;
  return { code, stdout, stderr };
}

async function authenticates(url: string, key: string): Promise<number> {
  return (await fetch(`${url}/applications`, { headers: { 'SVC-API-KEY': key } })).status;
}

describe('the first admin key', () => {
  it('SQLite: written to <db>.admin-key (0600), its path printed and never the key; the key works; a restart writes nothing', async () => {
    const db = join(dir, 'vault.db');
    let status = 0;
    const first = await serve(['--db', db], {}, async (url) => {
      status = await authenticates(url, readFileSync(`${db}.admin-key`, 'utf8').trim());
    });
    expect(first.code).toBe(0);
    const key = readFileSync(`${db}.admin-key`, 'utf8').trim();
    expect(key).toMatch(/^tv_/);
    expect(status).toBe(200);
    expect(statSync(`${db}.admin-key`).mode & 0o777).toBe(0o600);
    expect(first.stdout).toContain(`admin API key written to ${db}.admin-key (mode 0600)`);
    expect(first.stdout + first.stderr).not.toContain(key);
    rmSync(`${db}.admin-key`);
    const second = await serve(['--db', db]);
    expect(second.code).toBe(0);
    expect(second.stdout).not.toMatch(/admin API key/);
    expect(existsSync(`${db}.admin-key`)).toBe(false);
  });

  it('--admin-key-file chooses the place; --print-admin-key prints instead and writes nothing', async () => {
    const chosen = join(dir, 'secrets', 'admin.key');
    mkdirSync(join(dir, 'secrets'));
    const written = await serve(['--db', join(dir, 'chosen.db'), '--admin-key-file', chosen]);
    expect(written.code).toBe(0);
    expect(written.stdout).toContain(`written to ${chosen}`);
    expect(readFileSync(chosen, 'utf8')).toMatch(/^tv_\S+\n$/);

    const printed = await serve(['--db', join(dir, 'printed.db'), '--print-admin-key']);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/admin API key \(shown once, store it now\): tv_/);
    expect(existsSync(join(dir, 'printed.db.admin-key'))).toBe(false);
  });

  it('a place that cannot be written fails the start before any tenant exists, naming the file and the ways out', async () => {
    const locked = join(dir, 'locked');
    mkdirSync(locked);
    chmodSync(locked, 0o500);
    const db = join(dir, 'unwritable.db');
    try {
      const failed = await serve(['--db', db, '--admin-key-file', join(locked, 'admin.key')]);
      // root writes anywhere: then the start succeeds, and the rule is only that nothing leaks.
      if (process.getuid?.() === 0) return;
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/cannot write the admin API key file .*locked\/admin\.key .*--admin-key-file.*TOKENVAULT_ADMIN_KEY.*--print-admin-key/);
      // No tenant was created: the next start, with a writable place, makes the first one.
      const next = await serve(['--db', db]);
      expect(next.stdout).toContain(`written to ${db}.admin-key`);
    } finally {
      chmodSync(locked, 0o700);
    }
  });

  it.skipIf(!PG_URL)('PostgreSQL: ./tokenvault.admin-key by default; one of two instances starting on an empty schema writes the key, the other leaves no file', async () => {
    const schema = freshSchema('admin_key');
    const env = { TOKENVAULT_MASTER_KEY: generateMasterKey() };
    try {
      const a = join(dir, 'a.key');
      const b = join(dir, 'b.key');
      const common = ['--postgres', PG_URL!, '--postgres-schema', schema];
      const [one, two] = await Promise.all([serve([...common, '--admin-key-file', a], env), serve([...common, '--admin-key-file', b], env)]);
      expect([one.code, two.code]).toEqual([0, 0]);
      expect([existsSync(a), existsSync(b)].filter(Boolean)).toHaveLength(1);
      expect(readdirSync(dir).filter((name) => name.includes('.tmp-'))).toEqual([]);
    } finally {
      await dropSchema(schema);
    }
  });
});
