/**
 * Split knowledge for a PostgreSQL deployment (docs/key-custody.md): `keys split --postgres` takes
 * the key from --master-key-file or TOKENVAULT_MASTER_KEY and writes the split's record to
 * --key-shares-file; servers start sealed with that record and open on their admin socket;
 * `keys rotate` takes the threshold of shares on standard input; and the first start of an empty
 * database under a split key refuses without shares on standard input and works with them.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { CliError } from '../../src/cli/io.js';
import { keys } from '../../src/cli/keys.js';
import { runCli } from '../../src/cli/run.js';
import { unseal } from '../../src/cli/unseal.js';
import { ROOT, ensureBuilt } from '../support/ensure-built.js';
import { dropSchema, freshSchema } from '../support/postgres.js';
import { describePostgres } from '../support/stores.js';
import { ADMIN_KEY, CLI, api, cli } from './helpers.js';

type Output = { code: number | null; stdout: string; stderr: string };

/** A command that ends, in this process, with `lines` as its standard input where it reads one. */
async function run(args: string[], env: Record<string, string> = {}, lines?: string[]): Promise<Output> {
  let stdout = '';
  let stderr = '';
  const io = { env, stdout: (t: string) => void (stdout += t), stderr: (t: string) => void (stderr += t) };
  const input = (async function* () {
    yield* lines ?? [];
  })();
  if (args[0] !== 'unseal' && !(args[0] === 'keys' && args[1] === 'rotate')) return { code: await runCli(args, io), stdout, stderr };
  try {
    const code = args[0] === 'unseal' ? await unseal(args.slice(1), io, input) : await keys(args.slice(1), io, input);
    return { code, stdout, stderr };
  } catch (error) {
    // As runCli prints a refusal (these two are called directly, to be given standard input).
    if (!(error instanceof CliError)) throw error;
    return { code: 1, stdout, stderr: `${stderr}tokenvault: ${error.message}\n` };
  }
}

const sharesOf = (split: Output) => [...split.stdout.matchAll(/share \d: (tvshare1\.\S+)/g)].map((m) => m[1]!);

describePostgres('a split master key on PostgreSQL', (url) => {
  let dir: string;
  const schemas: string[] = [];
  beforeAll(() => {
    ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'tokenvault-pg-split-'));
  }, 600_000);
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    for (const schema of schemas) await dropSchema(schema);
  });

  it('splits a --master-key-file key; servers start sealed with the record and open on the socket; rotate takes shares on stdin', { timeout: 90_000 }, async () => {
    const schema = freshSchema('split');
    schemas.push(schema);
    const store = ['--postgres', url, '--postgres-schema', schema];
    const masterKey = generateMasterKey();
    const keyFile = join(dir, 'master.key');
    writeFileSync(keyFile, `${masterKey}\n`, { mode: 0o600 });
    const record = join(dir, 'vault.key-shares');
    const socket = join(dir, 'admin.sock');
    const reveal = [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];
    let appKey = '';
    const first = await cli(['serve', '--port', '0', ...store, '--master-key-file', keyFile], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY }, async (base) => {
      const app = await api(base, ADMIN_KEY, 'POST', '/applications', { name: 'a', type: 'private', permissions: ['token:create', 'token:read'], rules: reveal });
      appKey = app.body.key as string;
      expect((await api(base, appKey, 'POST', '/tokens', { type: 'token', id: 'kept', data: 'on postgres' })).status).toBe(201);
    });
    expect(first.code).toBe(0);

    // Without a place for the record, a PostgreSQL split is a usage error naming the flag.
    const noRecord = await run(['keys', 'split', '--shares', '3', '--threshold', '2', ...store, '--master-key-file', keyFile]);
    expect([noRecord.code, noRecord.stderr]).toEqual([2, expect.stringMatching(/--postgres needs --key-shares-file <path>/)]);
    // Another key than the database's is refused before anything is split.
    const otherKey = join(dir, 'other.key');
    writeFileSync(otherKey, `${generateMasterKey()}\n`, { mode: 0o600 });
    const wrong = await run(['keys', 'split', '--shares', '3', '--threshold', '2', ...store, '--master-key-file', otherKey, '--key-shares-file', record]);
    expect([wrong.code, existsSync(record)]).toEqual([1, false]);
    expect(wrong.stderr).toMatch(/master key does not match/);

    const split = await run(['keys', 'split', '--shares', '3', '--threshold', '2', ...store, '--master-key-file', keyFile, '--key-shares-file', record]);
    expect(split.code).toBe(0);
    const shares = sharesOf(split);
    expect(shares).toHaveLength(3);
    expect(existsSync(keyFile)).toBe(false);
    expect(split.stdout).toMatch(/start every server on this database with --key-shares-file/);
    expect(JSON.parse(readFileSync(record, 'utf8'))).toMatchObject({ format: 'tokenvault-key-shares/1', shares: 3, threshold: 2 });

    // The key kept in the environment beside its split is refused, not silently ignored.
    const both = await run(['serve', '--port', '0', ...store, '--key-shares-file', record, '--admin-socket', socket], { TOKENVAULT_MASTER_KEY: masterKey });
    expect([both.code, both.stderr]).toEqual([1, expect.stringMatching(/the master key is split .* but TOKENVAULT_MASTER_KEY .* still holds it/)]);

    const served = await cli(['serve', '--port', '0', ...store, '--key-shares-file', record, '--admin-socket', socket], {}, async (base) => {
      const sealed = await api(base, appKey, 'GET', '/tokens/kept');
      expect([sealed.status, sealed.body.type]).toEqual([503, 'urn:tokenvault:problem:sealed']);
      expect((await run(['unseal', '--admin-socket', socket], {}, [shares[2]!])).stdout).toBe('sealed: 1 of 2 shares given\n');
      expect((await run(['unseal', '--admin-socket', socket], {}, [shares[0]!])).stdout).toBe('unsealed: the vault serves\n');
      expect((await api(base, appKey, 'GET', '/tokens/kept')).body.data).toBe('on postgres');
    });
    expect(served.code).toBe(0);
    expect(served.stderr).toMatch(/sealed: requests answer 503 until 2 shares .*--admin-socket/);

    // Rotation needs the key: refused without shares, refused with too few, done with the threshold.
    const rotate = ['keys', 'rotate', ...store, '--key-shares-file', record];
    const bare = await run(rotate);
    expect([bare.code, bare.stderr]).toEqual([1, expect.stringMatching(/the master key is split: rotating needs it, so give 2 shares on standard input with --unseal-stdin/)]);
    const few = await run([...rotate, '--unseal-stdin'], {}, [shares[1]!]);
    expect([few.code, few.stderr]).toEqual([1, expect.stringMatching(/standard input ended before 2 distinct shares .* nothing was rotated/)]);
    const rotated = await run([...rotate, '--unseal-stdin'], {}, ['not a share', shares[1]!, shares[2]!]);
    expect(rotated.stderr).toMatch(/share on line 1 of standard input is refused/);
    expect([rotated.code, rotated.stdout]).toEqual([0, expect.stringMatching(/data key version 2, 1 tokens re-encrypted/)]);
    const outputs = [split.stderr, both.stdout, both.stderr, served.stdout, served.stderr, bare.stderr, few.stdout, few.stderr, rotated.stdout, rotated.stderr].join('\n');
    for (const share of shares) expect(outputs).not.toContain(share.split('.')[3]!);
    expect(outputs).not.toContain(masterKey);
  });

  it('the first start of an empty database under a split key refuses without shares on stdin, and starts with them', { timeout: 90_000 }, async () => {
    const schema = freshSchema('split');
    schemas.push(schema);
    const store = ['--postgres', url, '--postgres-schema', schema];
    const masterKey = generateMasterKey();
    const record = join(dir, 'empty.key-shares');
    const socket = join(dir, 'empty.sock');
    // The key from the environment: the split says it cannot take it back.
    const split = await run(['keys', 'split', '--shares', '2', '--threshold', '2', ...store, '--key-shares-file', record], { TOKENVAULT_MASTER_KEY: masterKey });
    expect(split.code).toBe(0);
    expect(split.stderr).toMatch(/the key came from TOKENVAULT_MASTER_KEY, which this command cannot take back: remove it/);
    const shares = sharesOf(split);

    const refused = await run(['serve', '--port', '0', ...store, '--key-shares-file', record, '--admin-socket', socket], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY });
    expect([refused.code, refused.stderr]).toEqual([
      1,
      expect.stringMatching(/the database holds no tenant yet: its first start creates one, which needs the master key. Start it with --unseal-stdin/),
    ]);

    // With the shares on standard input (the built CLI: serve reads its own stdin) it creates the tenant and serves.
    const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...store, '--key-shares-file', record, '--admin-socket', socket, '--unseal-stdin'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, TOKENVAULT_ADMIN_KEY: ADMIN_KEY },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const base = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString('utf8');
          const match = /listening on (http:\/\/\S+)/.exec(out);
          if (match) resolve(match[1]!);
        });
        void exited.then((code) => reject(new Error(`exited with ${code}:\n${out}\n${err}`)));
        child.stdin.end(`${shares[1]}\n${shares[0]}\n`);
      });
      expect(out).toMatch(/created tenant [\s\S]*its API key is TOKENVAULT_ADMIN_KEY/);
      expect((await api(base, ADMIN_KEY, 'GET', '/applications')).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    expect(`${out}${err}${refused.stderr}`).not.toContain(shares[0]!.split('.')[3]!);
  });
});
