// Proxy benchmark (docs/proxies.md): the ephemeral proxy (`POST /proxy`, a 1 KB JSON body naming 2
// tokens, through the real HTTP server on a file-backed SQLite vault) against calling the
// destination directly with the same body already detokenized, measured in the same run.
//   Latency: sequential requests, proxy and direct alternating, p50 and p99 of each; the overhead is
//   the proxy's p50 less the direct p50 (target ≤ 2 ms).
//   Throughput: autocannon, BENCH_PROXY_CONNECTIONS (default 16) connections, interleaved slices.
// Each server runs in its own child process (destination: a bare node:http JSON server; vault: the
// fetch handler with the Node adapter and --header-prefix BT, development switch on so that the
// destination may be on loopback). Run after a build: `npm run bench` or `node test/bench/proxy.mjs`.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http, { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REQUESTS = Number(process.env.BENCH_PROXY_REQUESTS ?? 2000);
const SECONDS = Number(process.env.BENCH_PROXY_SECONDS ?? 6);
const CONNECTIONS = Number(process.env.BENCH_PROXY_CONNECTIONS ?? 16);
const SLICES = 3;
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

/** A 1 KB JSON body whose two fields name the tokens (or hold their data, for the direct call). */
function body(number, secret) {
  const padding = 'x'.repeat(1024 - JSON.stringify({ amount: 1000, currency: 'usd', card: number, key: secret, description: '' }).length);
  return JSON.stringify({ amount: 1000, currency: 'usd', card: number, key: secret, description: padding });
}

async function serveDestination() {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const got = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'ch_1', amount: got.amount, status: 'succeeded' }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
}

async function serveVault() {
  const { createVault, generateMasterKey } = await import('../../dist/index.js');
  const { createSqliteStore } = await import('../../dist/sqlite.js');
  const { createFetchHandler } = await import('../../dist/http.js');
  const { toNodeListener } = await import('../../dist/node.js');
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-proxy-bench-'));
  const vault = await createVault({
    store: createSqliteStore({ filename: join(dir, 'bench.db') }),
    masterKey: generateMasterKey(),
    sweepIntervalMs: 0,
    reactors: { egress: { allowPrivateNetwork: true } },
  });
  const { application } = await vault.createTenant({ name: 'bench' });
  const admin = await vault.authenticate(application.key);
  const rules = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:use'] }];
  const app = await vault.applications.create(admin, { name: 'proxy', type: 'private', permissions: ['token:create', 'token:use', 'proxy:invoke'], rules });
  const caller = await vault.authenticate(app.key);
  const card = await vault.tokens.create(caller, { type: 'card', data: CARD });
  const secret = await vault.tokens.create(caller, { type: 'token', data: 'sk_test_4eC39HqLyjWDarjtT1zdp7dc' });
  const server = createServer(toNodeListener(createFetchHandler(vault, { headerPrefix: 'BT' })));
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.stdout.write(`${JSON.stringify({ port: server.address().port, key: app.key, card: card.id, secret: secret.id })}\n`);
  process.once('SIGTERM', async () => {
    server.close();
    await vault.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
}

async function startChild(kind) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve', kind], { stdio: ['ignore', 'pipe', 'inherit'] });
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

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** One request; resolves with its duration in ms after the whole answer arrived (and was checked). */
function timed(port, path, headers, payload) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 200)}`));
        else resolve(performance.now() - started);
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function throughput(options) {
  const { default: autocannon } = await import('autocannon');
  const result = await autocannon({ ...options, connections: CONNECTIONS, duration: SECONDS / SLICES, method: 'POST' });
  return { requests: result.requests.total, seconds: result.duration, bad: result.non2xx + result.errors + result.timeouts };
}

/** Runs the proxy benchmark and prints the figures. */
export async function run() {
  console.log(`\n== proxy: POST /proxy (1 KB JSON, 2 tokens) vs the destination directly; ${REQUESTS} sequential requests each, then ${CONNECTIONS} connections for ${SECONDS} s each ==`);
  const destination = await startChild('destination');
  const vault = await startChild('vault');
  try {
    const direct = { port: destination.port, path: '/v1/charges', headers: {}, body: body(CARD.number, 'sk_test_4eC39HqLyjWDarjtT1zdp7dc') };
    const proxied = {
      port: vault.port,
      path: '/proxy/v1/charges',
      headers: { 'BT-API-KEY': vault.key, 'BT-PROXY-URL': `http://127.0.0.1:${destination.port}` },
      body: body(`{{ ${vault.card} | json: '$.number' }}`, `{{ ${vault.secret} }}`),
    };
    // Warm-up: JIT, the SQLite page cache, the key ring.
    for (let i = 0; i < 200; i++) {
      await timed(direct.port, direct.path, direct.headers, direct.body);
      await timed(proxied.port, proxied.path, proxied.headers, proxied.body);
    }
    const d = [];
    const p = [];
    for (let i = 0; i < REQUESTS; i++) {
      d.push(await timed(direct.port, direct.path, direct.headers, direct.body));
      p.push(await timed(proxied.port, proxied.path, proxied.headers, proxied.body));
    }
    d.sort((a, b) => a - b);
    p.sort((a, b) => a - b);
    const rps = { direct: [], proxy: [] };
    for (let round = 0; round < SLICES; round++) {
      rps.direct.push(await throughput({ url: `http://127.0.0.1:${direct.port}${direct.path}`, headers: { 'content-type': 'application/json' }, body: direct.body }));
      rps.proxy.push(await throughput({ url: `http://127.0.0.1:${proxied.port}${proxied.path}`, headers: { ...proxied.headers, 'content-type': 'application/json' }, body: proxied.body }));
    }
    const rate = (slices) => slices.reduce((s, x) => s + x.requests, 0) / slices.reduce((s, x) => s + x.seconds, 0);
    const bad = [...rps.direct, ...rps.proxy].reduce((s, x) => s + x.bad, 0);
    const overhead = percentile(p, 50) - percentile(d, 50);
    const fmt = (ms) => `${ms.toFixed(2)} ms`;
    console.log(`proxy overhead p50 ${fmt(overhead)} (target ≤ 2 ms) ${overhead <= 2 ? 'ok' : 'ABOVE TARGET'}`);
    console.log(`  direct      p50 ${fmt(percentile(d, 50))}  p99 ${fmt(percentile(d, 99))}  ${rate(rps.direct).toFixed(0)} req/s`);
    console.log(`  via /proxy  p50 ${fmt(percentile(p, 50))}  p99 ${fmt(percentile(p, 99))}  ${rate(rps.proxy).toFixed(0)} req/s`);
    if (bad > 0) console.log(`  non-2xx/errors/timeouts: ${bad}`);
    return [{ name: 'proxy overhead p50 (ms)', overhead, direct: { p50: percentile(d, 50), p99: percentile(d, 99), rps: rate(rps.direct) }, proxy: { p50: percentile(p, 50), p99: percentile(p, 99), rps: rate(rps.proxy) } }];
  } finally {
    agent.destroy();
    await stopChild(vault.child);
    await stopChild(destination.child);
  }
}

if (process.argv[2] === '--serve') {
  await (process.argv[3] === 'destination' ? serveDestination() : serveVault());
} else if (import.meta.url === `file://${process.argv[1]}`) {
  await run();
}
