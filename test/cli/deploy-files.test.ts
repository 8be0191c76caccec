/**
 * deploy/Dockerfile and deploy/tokenvault.service (docs/production.md, Supervisors), checked as far
 * as this machine can: the unit passes `systemd-analyze verify`; the image's entry point, run with
 * its environment, serves, and its HEALTHCHECK command passes against /readyz. Building the image
 * needs a Docker daemon and is not run here (docs/production.md says so).
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { developmentOnly, instructions } from '../../scripts/dockerfile-context.mjs';
import { ROOT, ensureBuilt } from '../support/ensure-built.js';
import { ADMIN_KEY, CLI, cli, startCli } from './helpers.js';

const execFileAsync = promisify(execFile);
const DOCKERFILE = readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8');
const UNIT = readFileSync(join(ROOT, 'deploy', 'tokenvault.service'), 'utf8');
const hasSystemdAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;
let dir: string;
beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-deploy-'));
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('the Dockerfile: two stages, a non-root user, the database on a volume, exec-form node as PID 1, a HEALTHCHECK on /readyz', () => {
  expect(DOCKERFILE.match(/^FROM /gm)).toHaveLength(2);
  expect(DOCKERFILE).toMatch(/^FROM \S+ AS build$/m);
  expect(DOCKERFILE).toMatch(/^USER node$/m);
  expect(DOCKERFILE).toMatch(/^VOLUME \["\/var\/lib\/tokenvault"\]$/m);
  expect(DOCKERFILE).toMatch(/^ENTRYPOINT \["node", "\/app\/dist\/cli\.js"\]$/m);
  expect(DOCKERFILE).toMatch(/^HEALTHCHECK .*\n\s+CMD \[.*\/readyz/m);
});

it('the build stage drops what `npm prune --omit=dev` keeps of the development tree: the optional peers it brought', () => {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as Parameters<typeof developmentOnly>[0];
  // typescript today: valibot names it as an optional peer, so the lockfile marks it devOptional.
  const keptByPrune = developmentOnly(lock).filter((path) => !lock.packages[path]!.dev);
  expect(keptByPrune).toContain('node_modules/typescript');
  const prune = instructions(DOCKERFILE).find(({ keyword, rest }) => keyword === 'RUN' && rest.includes('npm prune --omit=dev'));
  expect(prune?.rest).toMatch(/&& rm -rf /);
  const removed = prune!.rest.split(/&& rm -rf /)[1]!.split(/\s+/);
  expect(removed).toEqual(expect.arrayContaining(keptByPrune));
});

it('a package that both trees need optionally, a production optional dependency, stays: only optional peers go', () => {
  const lock = {
    packages: {
      '': { optionalDependencies: { hsm: '1' }, devDependencies: { tool: '1' } },
      'node_modules/hsm': { devOptional: true },
      'node_modules/lib': { peerDependencies: { peer: '1' } },
      'node_modules/peer': { devOptional: true },
      'node_modules/tool': { dev: true, optionalDependencies: { hsm: '1' } },
    },
  };
  expect(developmentOnly(lock).sort()).toEqual(['node_modules/peer', 'node_modules/tool']);
});

it('the image entry point with its environment serves, and its HEALTHCHECK command passes', async () => {
  const env = Object.fromEntries(
    [
      ...DOCKERFILE.split('\n')
        .filter((line) => !line.startsWith('#'))
        .join('\n')
        .matchAll(/(TOKENVAULT_[A-Z_]+)=(\S+)/g),
    ].map((m) => [m[1]!, m[2]!]),
  );
  expect(env).toMatchObject({ TOKENVAULT_HOST: '0.0.0.0', TOKENVAULT_DB: '/var/lib/tokenvault/tokenvault.db' });
  // Here: a free port and a scratch directory stand for the published port and the volume.
  const cli = await startCli(['serve'], { ...env, TOKENVAULT_PORT: '0', TOKENVAULT_DB: join(dir, 'tokenvault.db'), TOKENVAULT_ADMIN_KEY: ADMIN_KEY });
  try {
    expect(cli.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    const check = /HEALTHCHECK [^\n]*\\\n\s+CMD (\[.*\])$/m.exec(DOCKERFILE)![1]!;
    const [command, ...args] = JSON.parse(check) as string[];
    expect(command).toBe('node');
    const result = await execFileAsync(process.execPath, args, { env: { PATH: process.env.PATH, TOKENVAULT_PORT: new URL(cli.url).port } });
    expect(result.stderr).toBe('');
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
    // Stopped: the same check now fails.
    await expect(execFileAsync(process.execPath, args, { env: { PATH: process.env.PATH, TOKENVAULT_PORT: new URL(cli.url).port } })).rejects.toThrow();
  } finally {
    if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
  }
});

describe("docs/production.md's two TLS setups", () => {
  const section = readFileSync(join(ROOT, 'docs', 'production.md'), 'utf8')
    .split(/^## TLS$/m)[1]!
    .split(/^## /m)[0]!;
  const [terminating, behindProxy] = [...section.matchAll(/```toml\n([\s\S]*?)```/g)].map((m) => m[1]!);

  it('tokenvault terminating TLS: its configuration passes config check with a certificate and key at the named paths', async () => {
    const [cert, key] = [join(dir, 'fullchain.pem'), join(dir, 'privkey.pem')];
    const subject = ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', ...subject, '-keyout', key, '-out', cert], {
      stdio: 'ignore',
    });
    expect(terminating).toMatch(/^tls-cert = "\/etc\/tokenvault\/tls\/fullchain\.pem"$/m);
    const file = join(dir, 'tls.toml');
    writeFileSync(file, terminating!.replaceAll('/etc/tokenvault/tls/', dir + '/'));
    const checked = await cli(['config', 'check', file]);
    expect(checked, checked.stderr).toMatchObject({ code: 0, stdout: expect.stringMatching(/valid \(sets port, host, tls-cert, tls-key\)/) });
  });

  it('behind a terminating proxy: its configuration serves https clients of the proxy only', async () => {
    const file = join(dir, 'behind-proxy.toml');
    // Port 0 for the documented 8080, so that the test needs no fixed port.
    writeFileSync(file, behindProxy!.replace(/^port = 8080$/m, 'port = 0'));
    const served = await cli(['serve', '--config', file, '--db', ':memory:', '--access-log', 'off'], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY }, async (url) => {
      const call = (proto?: string) => fetch(`${url}/applications`, { headers: { 'SVC-API-KEY': ADMIN_KEY, ...(proto ? { 'x-forwarded-proto': proto } : {}) } });
      // What nginx's `proxy_set_header X-Forwarded-Proto $scheme` and Caddy send for an https client.
      expect((await call('https')).status).toBe(200);
      expect((await call()).status).toBe(400);
    });
    expect(served.code, served.stderr).toBe(0);
  });
});

it.skipIf(!hasSystemdAnalyze)('the systemd unit passes systemd-analyze verify (its ExecStart pointed at this build)', async () => {
  expect(UNIT).toMatch(/^Restart=on-failure$/m);
  expect(UNIT).toMatch(/^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
  const unit = join(dir, 'tokenvault.service');
  writeFileSync(unit, UNIT.replace('ExecStart=/usr/bin/tokenvault', `ExecStart=${process.execPath} ${CLI}`));
  const { stdout, stderr } = await execFileAsync('systemd-analyze', ['verify', unit], { env: { ...process.env, SYSTEMD_LOG_LEVEL: 'notice' } });
  expect(stdout + stderr).toBe('');
});
