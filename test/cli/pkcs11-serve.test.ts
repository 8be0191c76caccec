/**
 * `tokenvault serve --key-provider pkcs11` on a real SoftHSM token, as a child process
 * (docs/key-custody.md): create and read, a memory scan of the serving process for the
 * key-encrypting key (its readable mappings, and a core dump taken with gcore), `keys rotate` through
 * the token, and a restart that reads what was written.
 */
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { ROOT, ensureBuilt } from '../support/ensure-built.js';
import { coreDumpCounts, itWithGcore } from '../support/core-dump.js';
import { describeSoftHsm, fileToken } from '../support/softhsm.js';
import { ADMIN_KEY, api, runCliProcess, startCli } from './helpers.js';

/** Whether `needle` is anywhere in the readable memory of process `pid` (/proc/<pid>/maps and /proc/<pid>/mem). */
function memoryHolds(pid: number, needles: Buffer[]): { found: boolean; scannedBytes: number } {
  const maps = readFileSync(`/proc/${pid}/maps`, 'utf8').trim().split('\n');
  const fd = openSync(`/proc/${pid}/mem`, 'r');
  let scannedBytes = 0;
  const chunk = Buffer.allocUnsafe(16 * 1024 * 1024);
  try {
    for (const line of maps) {
      const [range, perms] = line.split(' ');
      if (!perms!.startsWith('r')) continue;
      const [start, end] = range!.split('-').map((h) => BigInt(`0x${h}`)) as [bigint, bigint];
      // Overlapping reads: a needle across two chunks is still found.
      for (let at = start; at < end; at += BigInt(chunk.length - 64)) {
        const length = Number(end - at < BigInt(chunk.length) ? end - at : BigInt(chunk.length));
        let read: number;
        try {
          read = readSync(fd, chunk, 0, length, at);
        } catch {
          break; // a mapping the kernel will not read (vvar, guard pages)
        }
        scannedBytes += read;
        const view = chunk.subarray(0, read);
        if (needles.some((needle) => view.includes(needle))) return { found: true, scannedBytes };
        if (read < length) break;
      }
    }
  } finally {
    closeSync(fd);
  }
  return { found: false, scannedBytes };
}

describeSoftHsm('tokenvault serve --key-provider pkcs11 (the built CLI on SoftHSM)', () => {
  // A key value the test knows, imported sensitive and non-extractable, so a scan can look for it.
  const kek = randomBytes(32);
  const token = fileToken({ importHex: kek.toString('hex') });
  beforeAll(() => ensureBuilt(), 120_000);

  it('creates and reads with the key in the token, never in the process; rotates through it; a restart reads what was written', { timeout: 90_000 }, async () => {
    const t = token();
    const db = join(t.dir, 'vault.db');
    const flags = ['--db', db, '--key-provider', 'pkcs11', '--pkcs11-module', t.module, '--pkcs11-token-label', t.tokenLabel, '--pkcs11-key-label', t.keyLabel];
    const env = { SOFTHSM2_CONF: t.conf, TOKENVAULT_PKCS11_PIN: t.pin, TOKENVAULT_ADMIN_KEY: ADMIN_KEY };
    const reveal = [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];

    const first = await startCli(['serve', '--port', '0', ...flags], env);
    let key: string;
    try {
      const app = await api(first.url, ADMIN_KEY, 'POST', '/applications', { name: 'a', type: 'private', permissions: ['token:create', 'token:read'], rules: reveal });
      key = app.body.key as string;
      expect((await api(first.url, key, 'POST', '/tokens', { type: 'token', id: 'kept', data: { secret: 'in the hsm' } })).status).toBe(201);
      expect((await api(first.url, key, 'GET', '/tokens/kept')).body.data).toEqual({ secret: 'in the hsm' });
      // No key file is made beside the database: the HSM holds the key.
      expect(existsSync(`${db}.key`)).toBe(false);
      const scan = memoryHolds(first.child.pid!, [kek, Buffer.from(kek.toString('base64')), Buffer.from(kek.toString('hex'))]);
      expect(scan.scannedBytes).toBeGreaterThan(10 * 1024 * 1024);
      expect(scan.found).toBe(false);
      // The scan does find the key where it is: in this test's own memory.
      expect(memoryHolds(process.pid, [kek]).found).toBe(true);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
    } finally {
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
    }
    // The database holds no trace of the key either.
    const stored = readFileSync(db);
    expect(stored.includes(kek)).toBe(false);

    const rotated = await runCliProcess(['keys', 'rotate', ...flags], env);
    expect(rotated.stdout).toMatch(/data key version 2, 1 tokens re-encrypted/);
    expect(rotated.code).toBe(0);

    const wrongKey = await runCliProcess(['serve', '--port', '0', ...flags.slice(0, -1), 'other-label'], env);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toBe("tokenvault: --key-provider pkcs11: the token holds no secret key labelled 'other-label'\n");

    const second = await startCli(['serve', '--port', '0', ...flags], env);
    try {
      expect((await api(second.url, key, 'GET', '/tokens/kept')).body.data).toEqual({ secret: 'in the hsm' });
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    } finally {
      if (second.child.exitCode === null) second.child.kill('SIGKILL');
    }
  });

  itWithGcore('a core dump of the serving process holds no key-encrypting key', { timeout: 900_000 }, async () => {
    const t = token();
    const db = join(t.dir, 'core.db');
    const flags = ['--db', db, '--key-provider', 'pkcs11', '--pkcs11-module', t.module, '--pkcs11-token-label', t.tokenLabel, '--pkcs11-key-label', t.keyLabel];
    const server = await startCli(['serve', '--port', '0', ...flags], { SOFTHSM2_CONF: t.conf, TOKENVAULT_PKCS11_PIN: t.pin, TOKENVAULT_ADMIN_KEY: ADMIN_KEY });
    try {
      // Keys wrapped and unwrapped through the token before the dump: the tenant's, and a token's.
      const app = await api(server.url, ADMIN_KEY, 'POST', '/applications', { name: 'a', type: 'private', permissions: ['token:create'] });
      expect((await api(server.url, app.body.key as string, 'POST', '/tokens', { type: 'token', data: 'dumped' })).status).toBe(201);
      const dump = coreDumpCounts(server.child.pid!, [kek, Buffer.from(kek.toString('base64')), Buffer.from(kek.toString('hex'))], t.dir);
      expect(dump.bytes).toBeGreaterThan(10 * 1024 * 1024);
      expect(dump.counts).toEqual([0, 0, 0]);
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
    }
  });

  it("runs docs/key-custody.md's createVault block as written: the tenant's keys are wrapped in the token", async () => {
    const t = token();
    const page = readFileSync(join(ROOT, 'docs/key-custody.md'), 'utf8');
    const snippet = [...page.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]!).find((code) => code.includes('createPkcs11KeyProvider'))!;
    // Under the repository, so that `import 'tokenvault'` resolves through the package's exports to dist/.
    const dir = mkdtempSync(join(ROOT, '.snippet-'));
    try {
      writeFileSync(join(dir, 'snippet.mjs'), `${snippet}\nconsole.log(JSON.stringify({ tenant: typeof tenant.id }));\n`);
      const { stdout } = await promisify(execFile)(process.execPath, ['snippet.mjs'], {
        cwd: dir,
        env: { PATH: process.env.PATH, SOFTHSM2_CONF: t.conf, TOKENVAULT_PKCS11_PIN: t.pin },
      });
      expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({ tenant: 'string' });
      expect(existsSync(join(dir, 'vault.db'))).toBe(true);
      expect(existsSync(join(dir, 'vault.db.key'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
