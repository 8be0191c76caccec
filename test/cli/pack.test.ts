/**
 * `npm pack` from a fresh clone (no dist/) builds first (the prepack script), and the tarball
 * installs into a new project that runs the README's quick start: `tokenvault serve` in that
 * project's process, the admin key from its file, an application, a token written and read back.
 *
 * Lean by default: the clone's `tsup` is a stand-in that copies the suite's own fresh build (CI
 * builds with the real one before the tests), so what is proven here is that packing runs the build
 * and ships what it made. TOKENVAULT_PACK_FULL_BUILD=1 runs the real tsup in the clone. The install
 * prefers npm's cache (filled by `npm ci`) and skips install scripts: better-sqlite3's native build
 * is copied from the suite's node_modules, the same version.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DIST, ROOT, ensureBuilt } from '../support/ensure-built.js';

const execFileAsync = promisify(execFile);
const FULL_BUILD = process.env.TOKENVAULT_PACK_FULL_BUILD === '1';
let dir: string;
beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-pack-'));
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The files a clone would have (tracked, plus new ones not ignored), copied without dist/ or node_modules. */
function freshClone(to: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '-co', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\0');
  for (const file of files) {
    if (file === '' || !existsSync(join(ROOT, file))) continue;
    mkdirSync(join(to, file, '..'), { recursive: true });
    cpSync(join(ROOT, file), join(to, file));
  }
  // The clone's own node_modules: links to the suite's packages, its .bin with the build stand-in.
  const modules = join(to, 'node_modules');
  mkdirSync(join(modules, '.bin'), { recursive: true });
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
    if (entry !== '.bin') symlinkSync(join(ROOT, 'node_modules', entry), join(modules, entry));
  }
  for (const bin of readdirSync(join(ROOT, 'node_modules', '.bin'))) {
    if (bin !== 'tsup' || FULL_BUILD) symlinkSync(join(ROOT, 'node_modules', '.bin', bin), join(modules, '.bin', bin));
  }
  if (!FULL_BUILD) {
    writeFileSync(join(modules, '.bin', 'tsup'), `#!/bin/sh\nset -e\ncp -R '${DIST}' ./dist\n`);
    chmodSync(join(modules, '.bin', 'tsup'), 0o755);
  }
}

it('packs a fresh clone (prepack builds dist/), installs the tarball in a new project, which runs the quick start in process', async () => {
  const clone = join(dir, 'clone');
  freshClone(clone);
  expect(existsSync(join(clone, 'dist'))).toBe(false);
  const { stdout } = await execFileAsync('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: clone,
    env: { ...process.env, npm_config_loglevel: 'error' },
    maxBuffer: 64 * 1024 * 1024,
  });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as { filename: string; files: { path: string }[] }[];
  const shipped = packed!.files.map((f) => f.path);
  for (const path of ['dist/cli.js', 'dist/index.js', 'dist/index.d.ts', 'examples/tokenvault.toml', 'deploy/Dockerfile', 'deploy/tokenvault.service', 'README.md'])
    expect(shipped).toContain(path);
  expect(shipped.some((path) => path.startsWith('src/') || path.startsWith('test/'))).toBe(false);

  const app = join(dir, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'quick-start-app', private: true, type: 'module' }));
  await execFileAsync('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--omit=dev', join(dir, packed!.filename)], {
    cwd: app,
    env: { ...process.env, npm_config_loglevel: 'error' },
  });
  cpSync(join(ROOT, 'node_modules', 'better-sqlite3', 'build'), join(app, 'node_modules', 'better-sqlite3', 'build'), { recursive: true });
  expect(JSON.parse(readFileSync(join(app, 'node_modules', 'tokenvault', 'package.json'), 'utf8')).name).toBe('tokenvault');

  // The quick start, in this process, from the installed package: serve, then the README's calls.
  const { runCli } = (await import(pathToFileURL(join(app, 'node_modules', 'tokenvault', 'dist', 'cli.js')).href)) as typeof import('../../src/cli.js');
  const db = join(app, 'tokenvault.db');
  const controller = new AbortController();
  let out = '';
  let read: unknown;
  let failure: unknown;
  const code = await runCli(['serve', '--port', '0', '--db', db, '--access-log', 'off'], {
    env: {},
    stdout: (text) => (out += text),
    stderr: () => undefined,
    signal: controller.signal,
    onListening: (url) => {
      const call = async (key: string, method: string, path: string, body?: unknown) => {
        const response = await fetch(url + path, { method, headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
        return (await response.json()) as any;
      };
      (async () => {
        const admin = readFileSync(`${db}.admin-key`, 'utf8').trim();
        const checkout = await call(admin, 'POST', '/applications', {
          name: 'checkout',
          type: 'private',
          permissions: ['token:create', 'token:read', 'token:use'],
          rules: [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] }],
        });
        const token = await call(checkout.key, 'POST', '/tokens', { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 } });
        read = (await call(checkout.key, 'GET', `/tokens/${token.id}`)).data;
      })()
        .catch((error: unknown) => (failure = error))
        .finally(() => controller.abort());
    },
  });
  if (failure) throw failure;
  expect(code).toBe(0);
  expect(out).toContain(`admin API key written to ${db}.admin-key`);
  expect(read).toMatchObject({ number: '4242424242424242', expiration_month: 12 });
}, 240_000);
