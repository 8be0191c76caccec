import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type CliIo, runCli } from '../../src/cli.js';
import { CliError } from '../../src/cli/io.js';
import { type KeyFileOps, KeyFileError, createKeyFile, nodeKeyFileOps } from '../../src/cli/master-key-file.js';
import { openOperatorAt } from '../../src/cli/open-operator.js';
import type { StoreTarget } from '../../src/cli/store-target.js';
import { silentLogger } from '../../src/common/logger.js';
import { generateMasterKey } from '../../src/crypto/key-provider.js';

/** The key file is whole and durable before the store opens, or absent. */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-keyfile-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function io() {
  let stderr = '';
  const value: CliIo = { env: {}, stdout: () => undefined, stderr: (text) => (stderr += text) };
  return { io: value, stderr: () => stderr };
}

const target = (db: string): StoreTarget => ({ kind: 'sqlite', db, synchronous: 'full', exclusive: true });

function systemError(code: string, syscall: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${syscall}`), { code, syscall });
}

/** node:fs, with each call recorded as "<op> <file name>", and whether the database existed then. */
function recording(db: string, overrides: Partial<KeyFileOps> = {}) {
  const calls: string[] = [];
  const storeOpenedDuring: string[] = [];
  const names = new Map<number, string>();
  const ops = {} as KeyFileOps;
  for (const name of Object.keys(nodeKeyFileOps) as (keyof KeyFileOps)[]) {
    const run = (overrides[name] ?? nodeKeyFileOps[name]) as (...args: unknown[]) => unknown;
    (ops as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
      const first = args[0];
      const label = typeof first === 'number' ? names.get(first) : basename(String(first)).replace(/\.tmp-.*$/, '.tmp');
      calls.push(`${name} ${label}`);
      if (existsSync(db)) storeOpenedDuring.push(name);
      const result = run(...args);
      if (name === 'create') names.set(result as number, label!);
      return result;
    };
  }
  return { ops, calls, storeOpenedDuring };
}

const entries = () => readdirSync(dir).sort();

describe('the master key file', () => {
  it('on a full disk: a typed error naming the file and the cause, nothing left behind, and the next start works', async () => {
    const db = join(dir, 'x.db');
    const full = recording(db, {
      write: () => {
        throw systemError('ENOSPC', 'write');
      },
    });
    const out = io();
    const failed = openOperatorAt(target(db), out.io, silentLogger, {}, true, full.ops);
    await expect(failed).rejects.toBeInstanceOf(KeyFileError);
    await expect(failed).rejects.toBeInstanceOf(CliError);
    await expect(failed).rejects.toThrow(`could not write the master key file ${db}.key: no space left on device (ENOSPC); free space and start again; nothing was written`);
    // No partial key file, no temp file, and the store was never opened.
    expect(entries()).toEqual([]);
    expect(full.calls).toContain('unlink x.db.key.tmp');

    const next = await openOperatorAt(target(db), io().io, silentLogger, {}, true);
    await next.close();
    expect(entries()).toEqual(['x.db', 'x.db.key']);
    expect(statSync(`${db}.key`).mode & 0o777).toBe(0o600);
  });

  it('is fsynced, linked into place and its directory fsynced, in that order, before the store opens', async () => {
    const db = join(dir, 'y.db');
    const record = recording(db);
    const operator = await openOperatorAt(target(db), io().io, silentLogger, {}, true, record.ops);
    await operator.close();
    expect(record.calls.filter((call) => !call.startsWith('exists') && !call.startsWith('list'))).toEqual([
      'create y.db.key.tmp',
      'write y.db.key.tmp',
      'fsync y.db.key.tmp',
      'close y.db.key.tmp',
      'link y.db.key.tmp',
      'unlink y.db.key.tmp',
      `fsyncDir ${basename(dir)}`,
    ]);
    expect(record.storeOpenedDuring).toEqual([]);
    expect(existsSync(db)).toBe(true);
    expect(entries()).toEqual(['y.db', 'y.db.key']);
  });

  it('after a crash between writing the temp file and linking it, the next starts make and keep one key', async () => {
    const db = join(dir, 'z.db');
    // The process dies at the link: nothing after it runs (no clean-up).
    let dead = false;
    const crash = recording(db, {
      link: () => {
        dead = true;
        throw new Error('killed');
      },
      unlink: (path) => {
        if (!dead) nodeKeyFileOps.unlink(path);
      },
    });
    expect(() => createKeyFile(`${db}.key`, generateMasterKey(), crash.ops)).toThrow(KeyFileError);
    const leftover = entries();
    expect(leftover).toEqual([expect.stringMatching(/^z\.db\.key\.tmp-/)]);
    const unused = readFileSync(join(dir, leftover[0]!), 'utf8');

    const serve = async () => {
      const controller = new AbortController();
      let stderr = '';
      const code = await runCli(['serve', '--port', '0', '--db', db], {
        env: {},
        stdout: () => undefined,
        stderr: (text) => (stderr += text),
        signal: controller.signal,
        onListening: () => controller.abort(),
      });
      return { code, stderr };
    };
    const first = await serve();
    expect(first.code, first.stderr).toBe(0);
    const key = readFileSync(`${db}.key`, 'utf8');
    // A key of its own: the leftover's never served a database.
    expect(key).not.toBe(unused);
    // The leftover is gone once the key file exists; the restart uses that key (its tenant opens).
    expect(entries().filter((name) => name.includes('.tmp-'))).toEqual([]);
    const second = await serve();
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).not.toMatch(/generated a master key/);
    expect(readFileSync(`${db}.key`, 'utf8')).toBe(key);
  });

  it('never replaces a key file another starting process wrote meanwhile: both use that one', async () => {
    const db = join(dir, 'w.db');
    const theirs = generateMasterKey();
    const race = recording(db, {
      link: (existing, path) => {
        writeFileSync(path, `${theirs}\n`, { mode: 0o600, flag: 'wx' });
        nodeKeyFileOps.link(existing, path);
      },
    });
    const out = io();
    const operator = await openOperatorAt(target(db), out.io, silentLogger, {}, true, race.ops);
    await operator.close();
    expect(readFileSync(`${db}.key`, 'utf8')).toBe(`${theirs}\n`);
    expect(out.stderr()).not.toMatch(/generated a master key/);
    expect(entries()).toEqual(['w.db', 'w.db.key']);
  });

  it('when only the directory fsync fails, says the file is whole but may not survive a power cut', () => {
    const keyFile = join(dir, 'v.db.key');
    const failing = recording(join(dir, 'v.db'), {
      fsyncDir: () => {
        throw systemError('EIO', 'fsync');
      },
    });
    expect(() => createKeyFile(keyFile, generateMasterKey(), failing.ops)).toThrow(
      `could not make the master key file ${keyFile} durable: input/output error (EIO); check the disk and start again; no token was written`,
    );
    expect(entries()).toEqual(['v.db.key']);
  });

  it('an empty key file beside no database (left by an earlier version on a full disk) is replaced; beside data it is refused', async () => {
    const db = join(dir, 'e.db');
    writeFileSync(`${db}.key`, '', { mode: 0o600 });
    const out = io();
    const operator = await openOperatorAt(target(db), out.io, silentLogger, {}, true);
    await operator.close();
    expect(out.stderr()).toMatch(/e\.db\.key is empty and the database holds nothing yet/);
    expect(statSync(`${db}.key`).size).toBeGreaterThan(40);

    writeFileSync(`${db}.key`, '');
    await expect(openOperatorAt(target(db), io().io, silentLogger, {}, true)).rejects.toThrow(/does not hold a master key/);
  });

  it('an empty key file replaced by a concurrent start between the check and the replacement: its key is kept and used, never removed', async () => {
    const db = join(dir, 'r.db');
    const keyFile = `${db}.key`;
    writeFileSync(keyFile, '', { mode: 0o600 });
    const theirs = generateMasterKey();
    // The other start took the empty file aside and published its own whole key just before this one renames.
    const racing = recording(db, {
      rename: (from, to) => {
        if (from === keyFile) writeFileSync(keyFile, `${theirs}\n`, { mode: 0o600 });
        nodeKeyFileOps.rename(from, to);
      },
    });
    const operator = await openOperatorAt(target(db), io().io, silentLogger, {}, true, racing.ops);
    await operator.close();
    expect(readFileSync(keyFile, 'utf8').trim()).toBe(theirs);
    expect(entries().filter((name) => name.startsWith('r.db.key'))).toEqual(['r.db.key']);
  });
});
