/**
 * Split knowledge of the local master key through the built CLI (docs/key-custody.md): keys split,
 * a sealed start, tokenvault unseal / seal on the admin socket, shares on standard input at start,
 * and the shares and the key in no output, log or database file but the split's own print.
 */
import { spawn } from 'node:child_process';
import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalKeyProvider } from '../../src/crypto/key-provider.js';
import { splitMasterKey } from '../../src/crypto/key-shares.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { runCli } from '../../src/cli/run.js';
import { unseal as unsealCommand } from '../../src/cli/unseal.js';
import { ROOT, ensureBuilt } from '../support/ensure-built.js';
import { coreDumpCounts, itWithGcore } from '../support/core-dump.js';
import { ADMIN_KEY, CLI, api, startCli } from './helpers.js';

let dir: string;
beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-split-'));
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A CLI command in this process (the commands that end; serve runs as a child process below). */
async function inProcess(args: string[], lines?: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io = { env: {}, stdout: (t: string) => void (stdout += t), stderr: (t: string) => void (stderr += t) };
  const code =
    lines === undefined
      ? await runCli(args, io)
      : await unsealCommand(
          args.slice(1),
          io,
          (async function* () {
            yield* lines;
          })(),
        );
  return { code, stdout, stderr };
}

async function get(url: string, path: string, key?: string): Promise<{ status: number; retryAfter: string | null; body: any }> {
  const response = await fetch(url + path, { headers: key === undefined ? {} : { 'SVC-API-KEY': key } });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: JSON.parse(await response.text()) };
}

/** A share of another key relabelled as one of `set`'s (checksum recomputed): only the key check can tell it. */
function forged(line: string, set: string): string {
  const [prefix, , threshold, body] = line.split('.');
  const head = `${prefix}.${set}.${threshold}.${body}`;
  return `${head}.${createHash('sha256').update(head).digest('hex').slice(0, 8)}`;
}

describe('tokenvault keys split, unseal and seal (the built CLI)', () => {
  it('splits the key file; the server starts sealed and opens with any threshold of distinct shares of its split, and seals again', { timeout: 90_000 }, async () => {
    const db = join(dir, 'vault.db');
    const first = await startCli(['serve', '--port', '0', '--db', db], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY });
    const reveal = [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];
    const app = await api(first.url, ADMIN_KEY, 'POST', '/applications', { name: 'a', type: 'private', permissions: ['token:create', 'token:read'], rules: reveal });
    expect((await api(first.url, app.body.key, 'POST', '/tokens', { type: 'token', data: 'kept-secret', id: 'kept' })).status).toBe(201);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const masterKey = readFileSync(`${db}.key`, 'utf8').trim();

    expect((await inProcess(['keys', 'split', '--shares', '5', '--threshold', '1', '--db', db])).code).toBe(2);
    expect((await inProcess(['keys', 'split', '--shares', '5', '--threshold', '6', '--db', db])).code).toBe(2);
    const split = await inProcess(['keys', 'split', '--shares', '5', '--threshold', '3', '--db', db]);
    expect(split.code).toBe(0);
    const shares = [...split.stdout.matchAll(/share \d: (tvshare1\.\S+)/g)].map((m) => m[1]!);
    expect(shares).toHaveLength(5);
    expect(new Set(shares).size).toBe(5);
    expect(existsSync(`${db}.key`)).toBe(false);
    const record = JSON.parse(readFileSync(`${db}.key-shares`, 'utf8')) as { set: string; threshold: number };
    expect(record.threshold).toBe(3);
    const again = await inProcess(['keys', 'split', '--shares', '5', '--threshold', '3', '--db', db]);
    expect(again.stderr).toMatch(/is split already/);

    const outputs: string[] = [split.stderr];
    const server = await startCli(['serve', '--port', '0', '--db', db]);
    try {
      expect(server.stderr()).toMatch(/sealed: requests answer 503 until 3 shares/);
      const sealedRead = await get(server.url, '/tokens/kept', app.body.key);
      expect(sealedRead.status).toBe(503);
      expect(sealedRead.body.type).toBe('urn:tokenvault:problem:sealed');
      expect(sealedRead.retryAfter).toBe('30');
      expect((await get(server.url, '/readyz')).status).toBe(503);
      expect((await get(server.url, '/healthz')).status).toBe(200);

      const unseal = async (...lines: string[]) => {
        const result = await inProcess(['unseal', '--db', db], lines);
        outputs.push(result.stdout, result.stderr);
        return result;
      };
      // Threshold minus one: still sealed.
      expect((await unseal(shares[0]!, shares[1]!)).stdout).toBe('sealed: 2 of 3 shares given\n');
      expect((await get(server.url, '/tokens/kept', app.body.key)).status).toBe(503);
      const typo = shares[2]!.slice(0, 20) + (shares[2]![20] === 'A' ? 'B' : 'A') + shares[2]!.slice(21);
      const other = await splitMasterKey(randomBytes(32), 5, 3);
      const refused = await unseal(shares[1]!, typo, 'hello', other.lines[0]!);
      expect(refused.code).toBe(1);
      expect(refused.stderr.split('\n')).toEqual([
        'tokenvault: share 1 refused: is refused: this share was given already (2 of 3 given)',
        'tokenvault: share 2 refused: is refused: its checksum does not match: a character was changed or lost; copy the share again',
        'tokenvault: share 3 refused: is refused: it is not a tokenvault share (tvshare1.…, as `tokenvault keys split` printed it)',
        'tokenvault: share 4 refused: is refused: it belongs to another split of the key (the split this vault was sealed with is in its .key-shares file)',
        '',
      ]);
      expect((await get(server.url, '/tokens/kept', app.body.key)).status).toBe(503);

      const opened = await unseal(shares[4]!);
      expect(opened.stdout).toBe('unsealed: the vault serves\n');
      expect((await get(server.url, '/readyz')).status).toBe(200);
      expect((await get(server.url, '/tokens/kept', app.body.key)).body.data).toBe('kept-secret');

      const sealed = await inProcess(['seal', '--db', db]);
      expect(sealed.stdout).toBe('sealed: 0 of 3 shares given\n');
      expect((await get(server.url, '/tokens/kept', app.body.key)).body.type).toBe('urn:tokenvault:problem:sealed');

      // Shares of another key passed off as this split's: the key check refuses the whole set.
      const wrongKey = await unseal(...other.lines.slice(0, 3).map((line) => forged(line, record.set)));
      expect(wrongKey.stderr).toMatch(/do not rebuild this vault's master key/);
      expect((await get(server.url, '/tokens/kept', app.body.key)).status).toBe(503);
      // Another subset of the right shares opens it.
      expect((await unseal(shares[3]!, shares[0]!, shares[2]!)).stdout).toBe('unsealed: the vault serves\n');
      expect((await get(server.url, '/tokens/kept', app.body.key)).body.data).toBe('kept-secret');
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
    }
    outputs.push(server.stdout(), server.stderr());

    // Shares on standard input at start.
    const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--db', db, '--unseal-stdin'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    const url = await new Promise<string>((resolve) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString('utf8');
        const match = /listening on (http:\/\/\S+)/.exec(out);
        if (match) resolve(match[1]!);
      });
      child.stdin.write(`${shares[1]}\nnot-a-share\n${shares[2]}\n${shares[4]}\n`);
    });
    try {
      expect(err).toMatch(/share on line 2 of standard input is refused: it is not a tokenvault share/);
      expect((await get(url, '/tokens/kept', app.body.key)).body.data).toBe('kept-secret');
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    outputs.push(out, err);

    // No share and not the key in any output but the split's own, nor in the database's files.
    const key = Buffer.from(masterKey, 'base64');
    const files = readdirSync(dir).filter((name) => name.startsWith('vault.db') && !name.endsWith('.sock'));
    const stored = Buffer.concat(files.map((name) => readFileSync(join(dir, name))));
    const text = outputs.join('\n');
    for (const share of shares) {
      expect(text).not.toContain(share);
      expect(text).not.toContain(share.split('.')[3]!);
      expect(stored.includes(Buffer.from(share))).toBe(false);
      expect(stored.includes(Buffer.from(share.split('.')[3]!, 'base64url').subarray(0, 32))).toBe(false);
    }
    expect(text).not.toContain(masterKey);
    expect(stored.includes(key)).toBe(false);
    expect(stored.includes(Buffer.from(masterKey))).toBe(false);
  });

  itWithGcore(
    'a core dump after unseal holds the master key (kept to wrap new keys) and no share; after a seal, neither it nor any tenant key',
    { timeout: 1_800_000 },
    async () => {
      const db = join(dir, 'core.db');
      const first = await startCli(['serve', '--port', '0', '--db', db], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY });
      const reveal = [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];
      const app = await api(first.url, ADMIN_KEY, 'POST', '/applications', { name: 'a', type: 'private', permissions: ['token:create', 'token:read'], rules: reveal });
      expect((await api(first.url, app.body.key, 'POST', '/tokens', { type: 'token', id: 'dumped', data: 'in a core' })).status).toBe(201);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);

      // The keys the server will hold, computed here from the key file as the key ring does.
      const masterKey = Buffer.from(readFileSync(`${db}.key`, 'utf8').trim(), 'base64');
      const local = new LocalKeyProvider(masterKey);
      const store = createSqliteStore({ filename: db });
      const tenantKeys: Buffer[] = [];
      for (const tenant of await store.listTenants()) {
        for (const record of await store.listWrappedKeys(tenant.id, 'data'))
          tenantKeys.push(Buffer.from(local.unwrap(record.wrapped, `tokenvault:data-key:${tenant.id}:${record.version}`)));
        const [index] = await store.listWrappedKeys(tenant.id, 'index');
        const root = Buffer.from(local.unwrap(index!.wrapped, `tokenvault:index-key:${tenant.id}:1`));
        tenantKeys.push(root);
        for (const info of ['tokenvault/fingerprint/v1', 'tokenvault/search-index/v1', 'tokenvault/audit-mac/v1'])
          tenantKeys.push(Buffer.from(hkdfSync('sha256', root, Buffer.from(tenant.id), info, 32)));
      }
      await store.close();
      expect(tenantKeys.length).toBeGreaterThanOrEqual(5);

      const split = await inProcess(['keys', 'split', '--shares', '3', '--threshold', '2', '--db', db]);
      const shares = [...split.stdout.matchAll(/share \d: (tvshare1\.\S+)/g)].map((m) => m[1]!);
      // Each share's bytes as the server decodes them (the 32 bytes of its y values), and its text.
      const shareNeedles = shares.flatMap((line) => [Buffer.from(line.split('.')[3]!, 'base64url').subarray(0, 32), Buffer.from(line)]);
      const server = await startCli(['serve', '--port', '0', '--db', db]);
      try {
        expect((await inProcess(['unseal', '--db', db], [shares[0]!, shares[2]!])).stdout).toBe('unsealed: the vault serves\n');
        expect((await get(server.url, '/tokens/dumped', app.body.key)).body.data).toBe('in a core');
        const needles = [masterKey, ...tenantKeys, ...shareNeedles];
        const open = coreDumpCounts(server.child.pid!, needles, dir);
        expect(open.bytes).toBeGreaterThan(10 * 1024 * 1024);
        // Unsealed: the master key is in memory (it wraps the keys of new tenants and versions), and so
        // is each tenant key in use; no share is, in bytes. (A share's text may be, until collected.)
        expect(open.counts[0]).toBeGreaterThanOrEqual(1);
        expect(open.counts.slice(1, 2).every((n) => n >= 1)).toBe(true);
        const shareCounts = open.counts.slice(1 + tenantKeys.length);
        expect(shareCounts.filter((_, i) => i % 2 === 0)).toEqual(shares.map(() => 0));

        const sealing = await inProcess(['seal', '--db', db]);
        expect([sealing.stdout, sealing.stderr]).toEqual(['sealed: 0 of 2 shares given\n', '']);
        const sealed = coreDumpCounts(server.child.pid!, needles.slice(0, 1 + tenantKeys.length), dir);
        expect(sealed.counts).toEqual(needles.slice(0, 1 + tenantKeys.length).map(() => 0));
        server.child.kill('SIGTERM');
        expect(await server.exited).toBe(0);
      } finally {
        if (server.child.exitCode === null) server.child.kill('SIGKILL');
      }
    },
  );
});
