// Compares builds on one machine, interleaved, for changes smaller than this machine's noise (the
// HTTP ratios move by several points between runs of the same build). Not part of `npm run bench`.
//   node test/bench/compare.mjs GET|POST <dist> [<dist> ...]
// e.g. with the previous commit built in a worktree:
//   git worktree add /tmp/base HEAD~1 && ln -s "$PWD/node_modules" /tmp/base/ && (cd /tmp/base && npx tsup)
//   npm run build && node test/bench/compare.mjs GET /tmp/base/dist dist
// For each build it measures, in two phases of alternating rounds:
//   1. the fetch handler in process (what `tokenvault serve` runs, without sockets), 50 requests in
//      flight: median µs per request;
//   2. `tokenvault serve` from that build under autocannon, each run right after a run against a bare
//      node:http server: median of the per-pair req/s ratios, and the server's CPU (user + system) per
//      request from /proc (Linux).
// COMPARE_ROUNDS (default 7) and COMPARE_SECONDS (default 3) set the rounds and the HTTP time per round.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';

const [method = 'GET', ...dists] = process.argv.slice(2);
if (!['GET', 'POST'].includes(method) || dists.length === 0) {
  console.error('usage: node test/bench/compare.mjs GET|POST <dist> [<dist> ...]');
  process.exit(2);
}
const ROUNDS = Number(process.env.COMPARE_ROUNDS ?? 7);
const SECONDS = Number(process.env.COMPARE_SECONDS ?? 3);
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const CREATE_BODY = JSON.stringify({ type: 'card', data: CARD, deduplicate_token: false });
const tempDb = () => join(mkdtempSync(join(tmpdir(), 'tokenvault-compare-')), 'bench.db');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** CPU ms of a process (user + system), or NaN where /proc is missing. */
const cpuMs = (pid) => {
  if (!existsSync(`/proc/${pid}/stat`)) return Number.NaN;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/** The fetch handler of a build, with an application and a card token, as a function that sends one request. */
async function openCore(dist) {
  const load = (name) => import(pathToFileURL(join(dist, name)).href);
  const [{ createVault, generateMasterKey }, { createSqliteStore }, { createFetchHandler }] = await Promise.all([load('index.js'), load('sqlite.js'), load('http.js')]);
  const store = createSqliteStore({ filename: tempDb(), synchronous: 'normal', exclusive: true });
  const vault = await createVault({ store, masterKey: generateMasterKey(), sweepIntervalMs: 0 });
  const { application } = await vault.createTenant({ name: 'compare' });
  const admin = await vault.authenticate(application.key);
  const app = await vault.applications.create(admin, { name: 'compare', type: 'private', permissions: ['token:create', 'token:read'] });
  const token = await vault.tokens.create(await vault.authenticate(app.key), { type: 'card', data: CARD });
  const handler = createFetchHandler(vault);
  const close = () => vault.close();
  const headers = { 'svc-api-key': app.key, 'content-type': 'application/json' };
  // The public handler, as any runtime calls it: a web Request in, a Response out (read whole).
  const core = async () => {
    const init = method === 'GET' ? { headers } : { method, headers, body: CREATE_BODY };
    const response = await handler(new Request(method === 'GET' ? `http://vault/tokens/${token.id}` : 'http://vault/tokens', init));
    return { status: response.status, body: await response.text() };
  };
  const request = null;
  return { core, request, close };
}

/** µs per request with 50 in flight. */
async function coreRound({ core, request }, n = 20000) {
  const start = process.hrtime.bigint();
  let started = 0;
  await new Promise((done, fail) => {
    let finished = 0;
    const next = () => {
      if (started === n) return;
      started++;
      core(request).then((response) => {
        if (response.status >= 300) return fail(new Error(`${response.status} ${response.body}`));
        if (++finished === n) done();
        else next();
      }, fail);
    };
    for (let i = 0; i < 50; i++) next();
  });
  return Number(process.hrtime.bigint() - start) / n / 1000;
}

/** `--access-log off` for builds that log each request (older builds do not know the flag). */
function quietFlags(dist) {
  const knows = readdirSync(dist).some((f) => f.endsWith('.js') && readFileSync(join(dist, f), 'utf8').includes('--access-log <on|off>'));
  return knows ? ['--access-log', 'off'] : [];
}

/** `tokenvault serve` from a build (or the bare server), bootstrapped with an application and a token. */
async function startServer(dist) {
  const bench = fileURLToPath(new URL('./http.mjs', import.meta.url));
  const adminKey = `compare-admin-${randomBytes(16).toString('hex')}`;
  const args = dist === null ? [bench, '--serve', 'bare'] : [join(dist, 'cli.js'), 'serve', '--port', '0', '--db', tempDb(), '--synchronous', 'normal', ...quietFlags(dist)];
  const env = { ...process.env, TOKENVAULT_ADMIN_KEY: adminKey, TOKENVAULT_MASTER_KEY: randomBytes(32).toString('base64') };
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env });
  let out = '';
  for await (const chunk of child.stdout) {
    out += chunk;
    if (dist === null ? out.includes('\n') : /listening on \S+/.test(out)) break;
  }
  child.stdout.resume();
  if (dist === null) {
    const { port, path } = JSON.parse(out);
    return { child, url: `http://127.0.0.1:${port}`, path, key: 'none' };
  }
  const url = /listening on (http:\/\/\S+)/.exec(out)[1];
  const post = async (key, path, body) =>
    (await fetch(url + path, { method: 'POST', headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();
  const app = await post(adminKey, '/applications', { name: 'compare', type: 'private', permissions: ['token:create', 'token:read'] });
  const token = await post(app.key, '/tokens', { type: 'card', data: CARD });
  return { child, url, path: `/tokens/${token.id}`, key: app.key };
}

async function httpRound(server) {
  const options = {
    url: server.url + (method === 'GET' ? server.path : '/tokens'),
    connections: 50,
    duration: SECONDS,
    method,
    headers: { 'SVC-API-KEY': server.key, 'content-type': 'application/json' },
  };
  if (method === 'POST') options.body = CREATE_BODY;
  const before = cpuMs(server.child.pid);
  const result = await autocannon(options);
  return { rps: result.requests.total / SECONDS, cpuUs: ((cpuMs(server.child.pid) - before) * 1000) / result.requests.total };
}

const builds = dists.map((dist) => ({ dist: resolve(dist), name: dist, coreUs: [], ratios: [], cpuUs: [] }));
// Phase 1: the cores, in this process; closed before the servers run, so their work stays out of phase 2.
for (const build of builds) build.core = await openCore(build.dist);
for (let round = 0; round <= ROUNDS; round++) {
  // Round 0 warms every build up and is not counted.
  for (const build of builds) {
    const us = await coreRound(build.core);
    if (round > 0) build.coreUs.push(us);
  }
}
for (const build of builds) await build.core.close();

// Phase 2: the servers, each run paired with a bare run just before it.
const bare = await startServer(null);
for (const build of builds) build.server = await startServer(build.dist);
try {
  for (let round = 0; round <= ROUNDS; round++) {
    for (const build of builds) {
      const bareRun = await httpRound(bare);
      const { rps, cpuUs } = await httpRound(build.server);
      if (round === 0) continue;
      build.ratios.push(rps / bareRun.rps);
      build.cpuUs.push(cpuUs);
    }
  }
  console.log(`${method}: medians of ${ROUNDS} interleaved rounds`);
  for (const b of builds) {
    console.log(
      `  ${b.name.padEnd(24)} core ${median(b.coreUs).toFixed(1).padStart(6)} µs/request   serve ${(median(b.ratios) * 100).toFixed(1).padStart(5)}% of bare   server CPU ${median(b.cpuUs).toFixed(1).padStart(6)} µs/request   (serve by round: ${b.ratios.map((r) => (r * 100).toFixed(0)).join(', ')})`,
    );
  }
} finally {
  for (const { child } of [bare, ...builds.map((b) => b.server)]) child.kill('SIGTERM');
}
process.exit(0);
