// HTTP benchmark: the real tokenvault server (`tokenvault serve`, the built CLI, on a file-backed
// SQLite database) against a bare node:http JSON server, both measured in the same run with autocannon.
//   GET /tokens/{id}  (a card token, masked by the caller's default rules)   target ≥ 40% of bare
//   POST /tokens      (a card, deduplicate_token false, the same body each time) target ≥ 25% of bare
// A third server, "direct", calls the same vault services from a hand-written node:http listener
// (no routing, parsing or problem mapping) and writes its responses at the end of each event-loop
// turn as tokenvault's Node adapter does: the gap between it and tokenvault is the HTTP layer's own
// cost; the gap between bare and direct is the vault core's. The bare server stays a plain
// node:http server that answers at once.
// Each server runs in its own child process; autocannon runs here. The runs are interleaved in
// short slices (bare, direct, tokenvault, bare, …) so that a busy machine slows all three alike.
// Run after a build: `npm run bench` (or `node test/bench/http.mjs`). BENCH_HTTP_SECONDS (default 8)
// is the measuring time per server and endpoint.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 8);
const SLICES = 4;
const CONNECTIONS = 50;
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const CREATE_BODY = JSON.stringify({ type: 'card', data: CARD, deduplicate_token: false });

// --- child processes ---------------------------------------------------------------------------

/** A bare node:http JSON server: GET answers a token-sized object, POST parses the body and echoes an id. */
async function serveBare() {
  const token = {
    id: 'b1c2',
    type: 'card',
    tenant_id: 't',
    data: { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 },
    containers: ['/pci/high/'],
    metadata: {},
    created_at: new Date().toISOString(),
  };
  let n = 0;
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(token));
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...token, id: `b${n++}`, type: body.type }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.stdout.write(`${JSON.stringify({ port: server.address().port, path: '/tokens/b1c2', key: 'none' })}\n`);
}

const SYNCHRONOUS = process.env.BENCH_SYNCHRONOUS ?? 'normal';

/** A vault on a temp SQLite file configured as `tokenvault serve` opens it (WAL, exclusive), one card token. */
async function openVault() {
  const { createVault, generateMasterKey } = await import('../../dist/index.js');
  const { createSqliteStore } = await import('../../dist/sqlite.js');
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-http-bench-'));
  const store = createSqliteStore({ filename: join(dir, 'bench.db'), synchronous: SYNCHRONOUS, exclusive: true });
  const vault = await createVault({ store, masterKey: generateMasterKey(), sweepIntervalMs: 0 });
  const { application } = await vault.createTenant({ name: 'bench' });
  const admin = await vault.authenticate(application.key);
  // A default private application: token reads are masked by its implicit rules.
  const app = await vault.applications.create(admin, { name: 'bench', type: 'private', permissions: ['token:create', 'token:read'] });
  const caller = await vault.authenticate(app.key);
  const token = await vault.tokens.create(caller, { type: 'card', data: CARD });
  return { vault, dir, app, token };
}

/** The same service calls as tokenvault's routes, from a bare listener: the core's cost without the HTTP layer. */
async function serveDirect() {
  const { vault, dir, app, token } = await openVault();
  // Responses are written at the end of the event loop's turn, as tokenvault's Node adapter does
  // (one burst of writes wakes the client once, not once per response; see src/http/node.ts).
  let unwritten = [];
  const writeUnwritten = () => {
    const batch = unwritten;
    unwritten = [];
    for (const [res, status, text] of batch) {
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    }
  };
  const reply = (res, status, value) => {
    if (unwritten.length === 0) setImmediate(writeUnwritten);
    unwritten.push([res, status, JSON.stringify(value)]);
  };
  const server = createServer(async (req, res) => {
    try {
      const caller = await vault.authenticate(req.headers['svc-api-key']);
      if (req.method === 'GET') return reply(res, 200, await vault.tokens.get(caller, decodeURIComponent(req.url.slice('/tokens/'.length))));
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      reply(res, 201, await vault.tokens.create(caller, JSON.parse(Buffer.concat(chunks).toString('utf8'))));
    } catch {
      reply(res, 500, { error: 'failed' });
    }
  });
  await listenAndAnnounce(server, vault, dir, app, token);
}

/** The real server: `tokenvault serve` from dist/, bootstrapped over HTTP with an application and a card token. */
/**
 * `tokenvault serve` of the build at `cli` (dist/cli.js), with these flags, bootstrapped with a
 * default private application (token reads masked by its implicit rules) and a card token. Shared
 * by this benchmark and table.mjs.
 */
export async function startServe(cli, flags) {
  const adminKey = `bench-admin-${randomBytes(16).toString('hex')}`;
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', ...flags], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TOKENVAULT_ADMIN_KEY: adminKey, TOKENVAULT_MASTER_KEY: randomBytes(32).toString('base64') },
  });
  let out = '';
  let errors = '';
  // stderr is a pipe read to the end, as a supervisor (systemd, docker) reads it; kept only until listening.
  const keep = (chunk) => {
    if (errors.length < 65536) errors += chunk;
  };
  child.stderr.on('data', keep);
  let url;
  for await (const chunk of child.stdout) {
    out += chunk;
    url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
    if (url) break;
  }
  if (!url) throw new Error(`tokenvault serve did not start:\n${out}\n${errors}`);
  child.stdout.resume();
  child.stderr.off('data', keep);
  child.stderr.resume();
  const call = async (key, path, body) => {
    const response = await fetch(url + path, { method: 'POST', headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const app = await call(adminKey, '/applications', { name: 'bench', type: 'private', permissions: ['token:create', 'token:read'] });
  const token = await call(app.key, '/tokens', { type: 'card', data: CARD });
  return { child, url, port: Number(new URL(url).port), path: `/tokens/${token.id}`, key: app.key };
}

async function startCliServer() {
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-http-bench-'));
  const cli = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
  const server = await startServe(cli, ['--db', join(dir, 'bench.db'), '--synchronous', SYNCHRONOUS, '--access-log', 'off']);
  server.child.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return server;
}

async function listenAndAnnounce(server, vault, dir, app, token) {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.stdout.write(`${JSON.stringify({ port: server.address().port, path: `/tokens/${token.id}`, key: app.key })}\n`);
  process.once('SIGTERM', async () => {
    server.close();
    await vault.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
}

// --- the driver --------------------------------------------------------------------------------

async function startChild(kind, env = {}) {
  if (kind === 'vault') return startCliServer();
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve', kind], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  let out = '';
  for await (const chunk of child.stdout) {
    out += chunk;
    if (out.includes('\n')) break;
  }
  return { child, ...JSON.parse(out.split('\n')[0]) };
}

async function stopChild(child) {
  child.kill('SIGTERM');
  await once(child, 'exit');
}

/** One autocannon run of `seconds` against a server. */
async function slice(target, method, seconds) {
  const { default: autocannon } = await import('autocannon');
  const headers = { 'SVC-API-KEY': target.key };
  const options = { url: `http://127.0.0.1:${target.port}${method === 'GET' ? target.path : '/tokens'}`, connections: CONNECTIONS, duration: seconds, method, headers };
  if (method === 'POST') {
    headers['content-type'] = 'application/json';
    options.body = CREATE_BODY;
  }
  const result = await autocannon(options);
  return { requests: result.requests.total, seconds: result.duration, p99: result.latency.p99, bad: result.non2xx + result.errors + result.timeouts };
}

/** Interleaved slices against every target; req/s over all slices, p99 the median of the slices'. */
async function measureAll(targets, method) {
  const runs = targets.map(() => []);
  for (let round = 0; round < SLICES; round++) {
    for (let i = 0; i < targets.length; i++) runs[i].push(await slice(targets[i], method, SECONDS / SLICES));
  }
  return runs.map((slices) => {
    const p99s = slices.map((s) => s.p99).sort((a, b) => a - b);
    return {
      rps: slices.reduce((sum, s) => sum + s.requests, 0) / slices.reduce((sum, s) => sum + s.seconds, 0),
      p99: p99s[Math.floor(p99s.length / 2)],
      bad: slices.reduce((sum, s) => sum + s.bad, 0),
    };
  });
}

function line(name, [bare, direct, ours], target) {
  const ratio = ours.rps / bare.rps;
  const verdict = ratio >= target ? 'ok' : 'BELOW TARGET';
  const fmt = (label, r) => `${label} ${r.rps.toFixed(0).padStart(6)} req/s p99 ${String(r.p99).padStart(4)} ms`;
  console.log(`${name}: tokenvault ${(ratio * 100).toFixed(0)}% of bare (target ≥ ${target * 100}%) ${verdict}`);
  console.log(`  ${fmt('bare node:http      ', bare)}`);
  console.log(`  ${fmt('direct service calls', direct)}   (${((direct.rps / bare.rps) * 100).toFixed(0)}% of bare: the core's cost)`);
  console.log(`  ${fmt('tokenvault serve    ', ours)}   (${((ours.rps / direct.rps) * 100).toFixed(0)}% of direct: the HTTP layer's cost)`);
  const bad = [bare, direct, ours].map((r) => r.bad);
  if (bad.some((n) => n > 0)) console.log(`  non-2xx/errors/timeouts: bare ${bad[0]}, direct ${bad[1]}, tokenvault ${bad[2]}`);
  return { name, bare, direct, tokenvault: ours, ratio, target };
}

/** Runs the HTTP benchmark and prints the figures per endpoint. */
export async function run() {
  console.log(`\n== http: autocannon, ${CONNECTIONS} connections, ${SECONDS} s per server and endpoint (${SLICES} interleaved slices) ==`);
  const targets = [await startChild('bare'), await startChild('direct'), await startChild('vault')];
  try {
    const get = line('GET /tokens/{id}', await measureAll(targets, 'GET'), 0.4);
    const post = line('POST /tokens (card)', await measureAll(targets, 'POST'), 0.25);
    console.log(`  (SQLite synchronous=${SYNCHRONOUS}, WAL, held exclusively as serve does; BENCH_SYNCHRONOUS=full for an fsync per commit)`);
    return [get, post];
  } finally {
    for (const target of targets) await stopChild(target.child);
  }
}

if (process.argv[2] === '--serve') {
  const kind = process.argv[3];
  await (kind === 'bare' ? serveBare() : serveDirect());
} else if (import.meta.url === `file://${process.argv[1]}`) {
  await run();
}
