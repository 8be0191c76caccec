#!/usr/bin/env node
// deploy/Dockerfile's steps run as a script in a scratch directory, for a machine with no Docker
// daemon (CI here): docs/production.md, "What the suite checks here". Usage: node scripts/dockerfile-drill.mjs
//
// Each stage gets its own scratch root; the absolute paths of its WORKDIR, COPY, VOLUME and ENV
// lines are mapped into it. The build stage's RUN lines run as written (npm ci from npm's cache
// with the install scripts, pkcs11js compiled by node-gyp, the build, npm prune); a RUN that
// installs Debian packages is checked (the packages must be there) rather than run, and a RUN
// naming any other absolute path is refused, so nothing outside the scratch roots is touched. COPY . honours .dockerignore. Then
// the runtime stage's ENTRYPOINT + CMD start with its ENV as the image's user (uid 1000, `node`
// in the node images) when run as root, over an app tree owned by root that this user cannot
// write; the HEALTHCHECK command must pass against it, and SIGTERM must stop it with status 0.
// The runtime tree is checked against package-lock.json: every dependency, no development package.
// Not reproduced: the base image itself (this machine's node, Debian and toolchain stand for it),
// and the download of better-sqlite3's prebuilt binary (this checkout's build stands for it, see
// localPrebuilds). .ci/run runs this after the tests; it takes minutes, mostly npm ci.
// TOKENVAULT_DRILL_KEEP=1 keeps the scratch directory to look into.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyContext, developmentOnly, envPairs, instructions } from './dockerfile-context.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DOCKERFILE = join(ROOT, 'deploy', 'Dockerfile');
/** The uid and gid of the `node` user of the official node images. */
const IMAGE_USERS = { node: 1000, root: 0 };
const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const KEEP = process.env.TOKENVAULT_DRILL_KEEP === '1';

const LOCK = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
const began = Date.now();
const seconds = (from) => `${((Date.now() - from) / 1000).toFixed(1)} s`;
const step = (text) => console.log(`dockerfile-drill: ${text}`);
function fail(text) {
  console.error(`dockerfile-drill: FAILED: ${text}`);
  process.exit(1);
}

/**
 * better-sqlite3 installs with `prebuild-install || node-gyp rebuild`: in a real build the first
 * downloads the release's prebuilt binary from GitHub, which this machine cannot reach, so the
 * second would compile SQLite (minutes of two loaded cores). The binary this checkout's own
 * `npm ci` built from the same version and node ABI stands for that download, handed over through
 * prebuild-install's local prebuilds; prebuild-install still unpacks and loads it, and falls back to
 * node-gyp if it does not load. TOKENVAULT_DRILL_COMPILE=1 compiles instead.
 */
function localPrebuilds() {
  const version = LOCK.packages['node_modules/better-sqlite3']?.version;
  const host = join(ROOT, 'node_modules', 'better-sqlite3');
  const binary = join(host, 'build', 'Release', 'better_sqlite3.node');
  if (process.env.TOKENVAULT_DRILL_COMPILE === '1' || version === undefined || !existsSync(binary)) return {};
  if (JSON.parse(readFileSync(join(host, 'package.json'), 'utf8')).version !== version) return {};
  const dir = join(scratch, 'prebuilds');
  mkdirSync(join(dir, 'build', 'Release'), { recursive: true });
  cpSync(binary, join(dir, 'build', 'Release', 'better_sqlite3.node'));
  // prebuild-install's name for the release asset (glibc Linux: no libc part).
  const asset = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync('tar', ['-czf', join(dir, asset), '-C', dir, 'build']);
  step(`better-sqlite3 ${version}: this checkout's build stands for the prebuilt binary from GitHub (${asset})`);
  // npm warns of an unknown config for it, but hands it to the install script (a variable named
  // prebuild-install_local-prebuilds, its rc form, would not get through npm's `sh -c`).
  return { npm_config_better_sqlite3_local_prebuilds: dir };
}

const stages = [];
let stage;
const scratch = mkdtempSync(join(tmpdir(), 'tokenvault-dockerfile-'));
chmodSync(scratch, 0o755);
function cleanup() {
  if (KEEP) return step(`kept ${scratch}`);
  const started = Date.now();
  rmSync(scratch, { recursive: true, force: true });
  step(`removed the scratch directory: ${seconds(started)}`);
}
process.on('exit', cleanup);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(1));
const prebuilds = localPrebuilds();

/** Absolute paths of the image, as they exist under the stage's scratch root. */
const mapped = (s, path) => join(s.root, path);
const inImage = (s, path) => (path.startsWith('/') ? path : posix.join(s.workdir, path));
function rewriteRun(s, command) {
  // Every absolute path in the command must lie under one the Dockerfile gave this stage.
  return command.replace(/(^|[\s=])(\/[^\s;&|'"]*)/g, (all, lead, path) => {
    const known = [...s.dirs].find((dir) => path === dir || path.startsWith(dir + '/'));
    if (!known) fail(`RUN names ${path}, outside the directories of the stage (${[...s.dirs].join(', ')}): not run here`);
    return lead + mapped(s, path);
  });
}
const userOf = (spec) => {
  const [user, group = user] = spec.split(':');
  if (!(user in IMAGE_USERS) || !(group in IMAGE_USERS)) fail(`unknown user ${spec}`);
  return [IMAGE_USERS[user], IMAGE_USERS[group]];
};

const list = instructions(readFileSync(DOCKERFILE, 'utf8'));
// Directories a RUN may name: every WORKDIR, VOLUME, absolute COPY destination and ENV path.
const imageDirs = new Set();
for (const { keyword, rest } of list) {
  if (keyword === 'WORKDIR') imageDirs.add(rest);
  if (keyword === 'VOLUME') for (const dir of JSON.parse(rest)) imageDirs.add(dir);
  if (keyword === 'ENV') for (const value of Object.values(envPairs(rest))) if (value.startsWith('/')) imageDirs.add(posix.dirname(value));
}

for (const { keyword, rest } of list) {
  switch (keyword) {
    case 'FROM': {
      const [, image, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      stage = {
        name: name ?? `stage-${stages.length}`,
        image,
        root: join(scratch, name ?? `stage-${stages.length}`),
        workdir: '/',
        env: {},
        user: 'root',
        dirs: new Set(imageDirs),
      };
      mkdirSync(stage.root, { recursive: true });
      chmodSync(stage.root, 0o755);
      stages.push(stage);
      step(`FROM ${image}: scratch root ${stage.root} (this machine's node ${process.version} stands for the base image)`);
      break;
    }
    case 'WORKDIR':
      stage.workdir = rest;
      mkdirSync(mapped(stage, rest), { recursive: true });
      break;
    case 'ENV':
      Object.assign(stage.env, envPairs(rest));
      break;
    case 'COPY': {
      const words = rest.split(/\s+/);
      const flags = Object.fromEntries(words.filter((w) => w.startsWith('--')).map((w) => w.slice(2).split('=')));
      const paths = words.filter((w) => !w.startsWith('--'));
      const dest = inImage(stage, paths.pop());
      const from = flags.from === undefined ? undefined : stages.find((s) => s.name === flags.from);
      if (flags.from !== undefined && !from) fail(`COPY --from=${flags.from}: no such stage`);
      const started = Date.now();
      for (const source of paths) {
        const src = from ? mapped(from, source) : join(ROOT, source);
        // `dir/` (or several sources) receives each source by its name; otherwise dest is the copy.
        const into = dest.endsWith('/') && !(source === '.' || statSync(src).isDirectory());
        const to = into ? join(mapped(stage, dest), posix.basename(source)) : mapped(stage, dest);
        mkdirSync(dirname(to), { recursive: true });
        if (!from && source === '.') copyContext(ROOT, to);
        else cpSync(src, to, { recursive: true, verbatimSymlinks: true });
        if (flags.chown) execFileSync('chown', ['-R', userOf(flags.chown).join(':'), to]);
      }
      step(`COPY ${rest}: ${seconds(started)}`);
      break;
    }
    case 'RUN': {
      const packages = /apt-get install\s+(.*?)(&&|$)/.exec(rest);
      if (packages) {
        const names = packages[1].split(/\s+/).filter((w) => w !== '' && !w.startsWith('-'));
        const missing = names.filter(
          (name) => spawnSync('dpkg', ['-s', name], { stdio: 'ignore' }).status !== 0 && spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status !== 0,
        );
        if (missing.length > 0) fail(`the build stage needs ${missing.join(', ')} (apt-get install them)`);
        step(`RUN apt-get install ${names.join(' ')}: present here, not run`);
        break;
      }
      // npm's cache stands for the registry (--prefer-offline); node's own headers for node-gyp's download.
      let command = rewriteRun(stage, rest);
      command = command.replace(/\bnpm (ci|install)\b/g, 'npm $1 --prefer-offline');
      command = command.replace(/\bchown (\S+)/g, (all, spec) => `chown ${userOf(spec).join(':')}`);
      step(`RUN ${rest}`);
      const started = Date.now();
      const result = spawnSync('sh', ['-c', command], {
        cwd: mapped(stage, stage.workdir),
        stdio: 'inherit',
        env: {
          ...process.env,
          ...stage.env,
          ...prebuilds,
          npm_config_nodedir: process.env.npm_config_nodedir ?? dirname(dirname(process.execPath)),
          npm_config_update_notifier: 'false',
        },
      });
      if (result.status !== 0) fail(`RUN ${rest} exited with ${result.status}`);
      step(`  done in ${seconds(started)}`);
      break;
    }
    case 'USER':
      stage.user = rest;
      break;
    case 'VOLUME':
      for (const dir of JSON.parse(rest)) mkdirSync(mapped(stage, dir), { recursive: true });
      break;
    case 'HEALTHCHECK':
      stage.healthcheck = JSON.parse(/CMD\s+(\[.*\])$/.exec(rest)[1]);
      break;
    case 'ENTRYPOINT':
    case 'CMD':
      stage[keyword.toLowerCase()] = JSON.parse(rest);
      break;
    case 'EXPOSE':
    case 'STOPSIGNAL':
      stage[keyword.toLowerCase()] = rest;
      break;
    default:
      fail(`${keyword} is not handled by this drill`);
  }
}

const image = stages.at(-1);
if (!image.entrypoint || !image.healthcheck) fail('the last stage needs an ENTRYPOINT and a HEALTHCHECK');
const runtimeEntries = readdirSync(mapped(image, image.workdir));
if (runtimeEntries.includes('src') || runtimeEntries.includes('test')) fail(`the runtime stage holds sources: ${runtimeEntries.join(', ')}`);
// The runtime tree against the lockfile: every dependency there, no development package.
const runtimeRoot = mapped(image, image.workdir);
const devOnly = developmentOnly(LOCK)
  .filter((path) => existsSync(join(runtimeRoot, path)))
  .map((path) => path.replace(/^node_modules\//, ''));
if (devOnly.length > 0) fail(`the runtime stage holds development dependencies: ${devOnly.join(', ')}`);
const missing = Object.keys(LOCK.packages[''].dependencies ?? {}).filter((name) => !existsSync(join(runtimeRoot, 'node_modules', name)));
if (missing.length > 0) fail(`the runtime stage lacks dependencies: ${missing.join(', ')}`);
const compiled = existsSync(join(runtimeRoot, 'node_modules', 'better-sqlite3', 'build', 'Release', 'obj.target'));
step(`better-sqlite3 in the runtime stage: ${compiled ? 'compiled here by node-gyp' : 'the prebuilt binary, unpacked by prebuild-install'}`);

// The run: `docker run --read-only --tmpfs /tmp -v ...:/var/lib/tokenvault -e TOKENVAULT_MASTER_KEY_FILE=...`.
const asRoot = process.getuid?.() === 0;
const [uid, gid] = userOf(image.user);
const secret = mapped(image, '/run/secrets/master-key');
mkdirSync(dirname(secret), { recursive: true });
writeFileSync(secret, execFileSync(process.execPath, ['-e', "process.stdout.write(require('crypto').randomBytes(32).toString('base64'))"]), { mode: 0o600 });
if (asRoot) {
  chownSync(secret, uid, gid);
  // The app tree is root's and the image's user cannot write it: the read-only root filesystem.
  execFileSync('chown', ['-R', '0:0', mapped(image, image.workdir)]);
}
const port = await new Promise((resolve) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port: free } = server.address();
    server.close(() => resolve(free));
  });
});
const mapValue = (value) => ([...image.dirs].some((dir) => value === dir || value.startsWith(dir + '/')) ? mapped(image, value) : value);
const env = {
  PATH,
  HOME: mapped(image, '/home/node'),
  ...Object.fromEntries(Object.entries(image.env).map(([k, v]) => [k, mapValue(v)])),
  // A free port stands for the published 8080; the secret file for the Docker secret.
  TOKENVAULT_PORT: String(port),
  TOKENVAULT_MASTER_KEY_FILE: secret,
};
const [command, ...args] = [...image.entrypoint, ...(image.cmd ?? [])].map(mapValue);
const privileged = asRoot ? ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--'] : [];
step(`run ${[...image.entrypoint, ...(image.cmd ?? [])].join(' ')} as ${asRoot ? `uid ${uid}` : 'this user (not root: no setpriv)'}, port ${port}`);
const [exe, ...rest] = [...privileged, command === 'node' ? process.execPath : command, ...args];
const server = spawn(exe, rest, { env, stdio: ['ignore', 'pipe', 'pipe'] });
let out = '';
server.stdout.on('data', (d) => (out += d));
server.stderr.on('data', (d) => (out += d));
const exited = new Promise((resolve) => server.on('exit', (code, signal) => resolve(code ?? signal)));
const listening = await Promise.race([
  new Promise((resolve) => {
    const check = () => (/listening on /.test(out) ? resolve(true) : setTimeout(check, 50));
    check();
  }),
  exited.then(() => false),
]);
if (!listening) fail(`the server exited before listening:\n${out}`);

const health = (label) => {
  const [healthCommand, ...healthArgs] = image.healthcheck;
  if (healthCommand !== 'node') fail(`the HEALTHCHECK runs ${healthCommand}; this drill runs node's only`);
  const argv = [...privileged, process.execPath, ...healthArgs];
  const result = spawnSync(argv[0], argv.slice(1), { env, encoding: 'utf8', timeout: 10_000 });
  step(`HEALTHCHECK ${image.healthcheck.join(' ').slice(0, 60)}... (${label}): exit ${result.status}`);
  return result.status;
};
if (health('serving') !== 0) {
  server.kill('SIGKILL');
  fail(`the HEALTHCHECK command failed against the running server:\n${out}`);
}
const adminKey = mapValue(`${image.env.TOKENVAULT_DB}.admin-key`);
if (!existsSync(adminKey) || (statSync(adminKey).mode & 0o077) !== 0) fail(`the admin key file ${adminKey} is missing or readable by others`);
if (asRoot && statSync(adminKey).uid !== uid) fail(`the admin key file is not owned by the image's user`);
const written = spawnSync('find', [mapped(image, image.workdir), '-newer', secret, '-not', '-type', 'd'], { encoding: 'utf8' }).stdout.trim();
if (written !== '') fail(`the server wrote inside the app tree: ${written}`);

server.kill(image.stopsignal ?? 'SIGTERM');
const code = await exited;
if (code !== 0) fail(`${image.stopsignal ?? 'SIGTERM'} ended the server with ${code}:\n${out}`);
if (health('stopped') === 0) fail('the HEALTHCHECK command still passes after the server stopped');
step(`ok in ${seconds(began)}: built in ${scratch}, served as uid ${asRoot ? uid : process.getuid?.()}, healthy, stopped by ${image.stopsignal ?? 'SIGTERM'} with 0`);
