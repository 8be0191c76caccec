import { mkdtempSync, rmSync, statSync, writeFileSync, existsSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliIo, runCli } from '../../src/cli.js';
import { generateMasterKey } from '../../src/crypto/key-provider.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-usage-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function run(argv: string[], env: Record<string, string> = {}, signal?: AbortSignal) {
  let stdout = '';
  let stderr = '';
  let url: string | undefined;
  const io: CliIo = {
    env,
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    onListening: (u) => (url = u),
    ...(signal ? { signal } : {}),
  };
  const code = await runCli(argv, io);
  return { code, stdout, stderr, url };
}

/** Starts serve in-process and stops it as soon as it listens. */
async function serveOnce(argv: string[], env: Record<string, string> = {}) {
  const controller = new AbortController();
  let stdout = '';
  let stderr = '';
  const code = await runCli(['serve', '--port', '0', ...argv], {
    env,
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    signal: controller.signal,
    onListening: () => controller.abort(),
  });
  return { code, stdout, stderr };
}

describe('usage', () => {
  it('--help on each command prints its usage and exits 0', async () => {
    for (const argv of [['--help'], ['serve', '--help'], ['keys', 'rotate', '--help'], ['keys', '--help'], ['migrate', '-h']]) {
      const result = await run(argv);
      expect(result.code, argv.join(' ')).toBe(0);
      expect(result.stdout).toMatch(/^Usage: tokenvault/);
    }
    expect((await run(['serve', '--help'])).stdout).toContain('--allow-private-network');
    expect((await run(['serve', '--help'])).stdout).toContain('--trust-forwarded-for <n|list>');
  });

  it('bad flags and commands: exit 2 with a clear message and a pointer to --help', async () => {
    const cases: [string[], RegExp][] = [
      [['serve', '--bogus'], /Unknown option '--bogus'/],
      [['serve', '--port', 'abc'], /--port must be a whole number from 0 to 65535/],
      [['serve', '--port', '70000'], /--port must be a whole number/],
      [['serve', '--port'], /--port/],
      [['serve', 'extra'], /Unexpected argument 'extra'/],
      [['serve', '--synchronous', 'sometimes'], /--synchronous must be/],
      [['serve', '--trust-forwarded-for', '11'], /--trust-forwarded-for must be a whole number of reverse proxies from 0 to 10/],
      [['serve', '--trust-forwarded-for', 'yes'], /--trust-forwarded-for: 'yes' must be an IP address or CIDR range \(.*\) \(or a number of reverse proxies, 0 to 10\)/],
      [['serve', '--trust-forwarded-for', '10.0.0.0/8,10.1.2.3/40'], /--trust-forwarded-for: '10.1.2.3\/40' must be an IP address or CIDR range/],
      [['serve', '--trust-forwarded-for', ','], /--trust-forwarded-for must name at least one reverse proxy address/],
      [['frobnicate'], /unknown command 'frobnicate'/],
      [['keys'], /needs a subcommand: rotate/],
      [['keys', 'spin'], /unknown subcommand 'keys spin'/],
    ];
    for (const [argv, message] of cases) {
      const result = await run(argv);
      expect(result.code, argv.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).toMatch(/--help' for usage/);
    }
    expect((await run([])).code).toBe(2);
  });

  it('--postgres: combined with SQLite flags, or --postgres-schema alone, is a usage error', async () => {
    const cases: [string[], RegExp][] = [
      [['serve', '--db', 'x.db', '--postgres', 'postgres://localhost/db'], /--db and --postgres cannot be combined/],
      [['serve', '--postgres', 'postgres://localhost/db', '--synchronous', 'normal'], /--synchronous applies to SQLite \(--db\) only/],
      [['serve', '--postgres', 'postgres://localhost/db', '--shared-db'], /--shared-db applies to SQLite \(--db\) only/],
      [['serve', '--postgres-schema', 'vault'], /--postgres-schema needs --postgres/],
      [['serve', '--postgres-prepared-statements', 'on'], /--postgres-prepared-statements needs --postgres/],
      [['serve', '--postgres', 'postgres://localhost/db', '--postgres-prepared-statements', 'yes'], /--postgres-prepared-statements must be 'on' or 'off'/],
      [['migrate', '--db', 'x.db', '--postgres', 'postgres://localhost/db'], /--db and --postgres cannot be combined/],
      [['keys', 'rotate', '--postgres-schema', 'vault'], /--postgres-schema needs --postgres/],
      [['migrate', '--postgres-prepared-statements', 'off'], /--postgres-prepared-statements needs --postgres/],
    ];
    for (const [argv, message] of cases) {
      const result = await run(argv);
      expect(result.code, argv.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    expect((await run(['serve', '--help'])).stdout).toContain('--postgres-schema');
    expect((await run(['migrate', '--help'])).stdout).toContain('--postgres');
  });

  it('--postgres needs TOKENVAULT_MASTER_KEY, and says how to generate one', async () => {
    for (const argv of [['serve'], ['keys', 'rotate']]) {
      const result = await run([...argv, '--postgres', 'postgres://vault:pw-secret@127.0.0.1:1/vault']);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/TOKENVAULT_MASTER_KEY is required with --postgres/);
      expect(result.stderr).toContain(`node -e "console.log(require('crypto').randomBytes(32).toString('base64'))"`);
      expect(result.stderr).not.toContain('pw-secret');
    }
  });

  it('--postgres: bad options and unreachable servers are reported without the password', async () => {
    const env = { TOKENVAULT_MASTER_KEY: generateMasterKey() };
    const unreachable = 'postgres://vault:pw-secret@127.0.0.1:1/vault';
    for (const argv of [
      ['serve', '--port', '0', '--postgres', unreachable],
      ['migrate', '--postgres', unreachable],
      ['keys', 'rotate', '--postgres', unreachable],
    ]) {
      const result = await run(argv, env);
      expect(result.code, argv[0]).toBe(1);
      expect(result.stderr).toMatch(/cannot use the PostgreSQL database postgres:\/\/vault:\*\*\*@127\.0\.0\.1:1\/vault: ECONNREFUSED/);
      expect(result.stderr + result.stdout).not.toContain('pw-secret');
    }
    const notPostgres = await run(['serve', '--postgres', 'mysql://vault:pw-secret@db/vault'], env);
    expect(notPostgres.code).toBe(1);
    expect(notPostgres.stderr).toMatch(/connectionString: must be a postgres:\/\/ or postgresql:\/\/ URL/);
    expect(notPostgres.stderr).not.toContain('pw-secret');
    const badSchema = await run(['serve', '--postgres', unreachable, '--postgres-schema', 'Bad-Name'], env);
    expect(badSchema.code).toBe(1);
    expect(badSchema.stderr).toMatch(/schema: must be a lower-case identifier/);
  });

  it('a TOKENVAULT_ADMIN_KEY under 24 characters is refused', async () => {
    const result = await run(['serve', '--db', ':memory:'], { TOKENVAULT_ADMIN_KEY: 'short' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/TOKENVAULT_ADMIN_KEY must be at least 24 characters/);
    expect(result.stderr).not.toContain('short');
  });

  it('a malformed TOKENVAULT_MASTER_KEY is refused without printing it', async () => {
    const result = await run(['serve', '--db', ':memory:'], { TOKENVAULT_MASTER_KEY: 'bm90LTMyLWJ5dGVz' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/TOKENVAULT_MASTER_KEY must be the base64 of 32 bytes/);
    expect(result.stderr).not.toContain('bm90LTMyLWJ5dGVz');
  });

  it('a bad --header-prefix is refused', async () => {
    const result = await run(['serve', '--db', ':memory:', '--header-prefix', 'no spaces'], {});
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/headerPrefix/);
  });
});

describe('serve (in-process)', () => {
  it('prints the real port, the generated admin key once, and never the master key', async () => {
    const masterKey = generateMasterKey();
    const result = await serveOnce(['--db', ':memory:'], { TOKENVAULT_MASTER_KEY: masterKey });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/listening on http:\/\/127\.0\.0\.1:[1-9]\d*/);
    expect(result.stdout).toMatch(/admin API key \(shown once, store it now\): tv_/);
    expect(result.stdout + result.stderr).not.toContain(masterKey);
  });

  it('with TOKENVAULT_MASTER_KEY a file database gets no key file', async () => {
    const db = join(dir, 'env.db');
    const result = await serveOnce(['--db', db], { TOKENVAULT_MASTER_KEY: generateMasterKey(), TOKENVAULT_ADMIN_KEY: 'x'.repeat(24) });
    expect(result.code).toBe(0);
    expect(existsSync(`${db}.key`)).toBe(false);
    expect(result.stdout).not.toMatch(/admin API key/);
  });

  it('refuses to invent a key for an existing database whose key file is missing', async () => {
    const db = join(dir, 'orphan.db');
    const first = await serveOnce(['--db', db]);
    expect(first.code).toBe(0);
    rmSync(`${db}.key`);
    const second = await serveOnce(['--db', db]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/no master key for .*orphan\.db/);
  });

  it('warns about a key file others can read, and refuses one that holds no key', async () => {
    const db = join(dir, 'loose.db');
    writeFileSync(`${db}.key`, `${generateMasterKey()}\n`);
    chmodSync(`${db}.key`, 0o644);
    const loose = await serveOnce(['--db', db]);
    expect(loose.code).toBe(0);
    expect(loose.stderr).toMatch(/readable by other users/);
    const bad = join(dir, 'bad.db');
    writeFileSync(`${bad}.key`, 'not a key\n', { mode: 0o600 });
    const refused = await serveOnce(['--db', bad]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/does not hold a master key/);
    expect(statSync(`${bad}.key`).size).toBeGreaterThan(0);
  });

  it('fails at start when the master key does not match the database, or the database cannot be opened', async () => {
    const db = join(dir, 'mismatch.db');
    expect((await serveOnce(['--db', db], { TOKENVAULT_MASTER_KEY: generateMasterKey() })).code).toBe(0);
    const wrong = await serveOnce(['--db', db], { TOKENVAULT_MASTER_KEY: generateMasterKey() });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/master key does not match/);
    expect(wrong.stdout).not.toMatch(/listening/);
    const missingDir = await serveOnce(['--db', join(dir, 'no', 'such', 'dir', 'x.db')], { TOKENVAULT_MASTER_KEY: generateMasterKey() });
    expect(missingDir.code).toBe(1);
    expect(missingDir.stderr).toMatch(/cannot open the database .*x\.db: its directory does not exist/);
    const isDirectory = await serveOnce(['--db', dir], { TOKENVAULT_MASTER_KEY: generateMasterKey() });
    expect(isDirectory.code).toBe(1);
    expect(isDirectory.stderr).toMatch(/cannot open the database/);
  });

  it('keys rotate: errors for a missing database or an unknown tenant', async () => {
    expect((await run(['keys', 'rotate', '--db', join(dir, 'none.db')])).stderr).toMatch(/no database at/);
    const db = join(dir, 'rot.db');
    await serveOnce(['--db', db]);
    const unknown = await run(['keys', 'rotate', '--db', db, '--tenant', 'nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no tenant with that id/);
    const skip = await run(['keys', 'rotate', '--db', db, '--skip-reencrypt']);
    expect(skip.code).toBe(0);
    expect(skip.stdout).toMatch(/data key version 2\n/);
  });
});
