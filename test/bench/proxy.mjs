// Proxy benchmark (docs/proxies.md, Performance): four ways through the proxy, each against calling
// the destination directly with the body it would receive, measured in the same run:
//   ephemeral  `POST /proxy` with `BT-PROXY-URL`, a 1 KB JSON body naming 2 tokens;
//   keyed      the same body to a pre-configured proxy with `BT-PROXY-KEY` and an API key, no transforms;
//   tokenize   an inbound call (`require_auth: false`, the proxy key only) posting a card in clear in
//              the 1 KB body; a request tokenize transform swaps it for a new token's id;
//   code       the keyed call (2 tokens) through a request `code` transform in the reactor sandbox
//              that adds an authorization header from the proxy's configuration.
//   Latency: sequential requests, the row's call and the direct call alternating, p50 and p99 of
//   each; the overhead is the row's p50 less its direct p50 (target ≤ 2 ms for the ephemeral row).
//   Throughput: autocannon, BENCH_PROXY_CONNECTIONS (default 16) connections, interleaved slices.
// Each server runs in its own child process (destination: a bare node:http JSON server; vault: the
// fetch handler with the Node adapter and --header-prefix BT, development switch on so that the
// destination may be on loopback, the inbound rate limit raised out of the way). Run after a build:
// `npm run bench` or `node test/bench/proxy.mjs` (BENCH_PROXY_ROWS=ephemeral,code for some rows).
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
      // What arrived, so that each row checks once that its transforms ran (see expect in run()).
      const card = typeof got.card === 'string' ? (/^\d{16}$/.test(got.card) ? 'number' : 'token id') : typeof got.card;
      res.end(JSON.stringify({ id: 'ch_1', amount: got.amount, status: 'succeeded', card, authorized: req.headers.authorization !== undefined }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
}

/** The request code transform of the `code` row: what a typical one does, add the destination's credentials. */
const CODE = "module.exports = async (req) => ({ headers: { ...req.args.headers, authorization: 'Bearer ' + req.configuration.API_KEY }, body: req.args.body })";

async function serveVault(destinationPort) {
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
    // Every inbound call comes from 127.0.0.1: the limit would answer 429 after 20 a second.
    proxy: { inboundRateLimit: { perKey: { requests: 1_000_000, windowMs: 1000 }, perAddress: { requests: 1_000_000, windowMs: 1000 } } },
  });
  const { application } = await vault.createTenant({ name: 'bench' });
  const admin = await vault.authenticate(application.key);
  const rules = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:use'] }];
  const app = await vault.applications.create(admin, { name: 'proxy', type: 'private', permissions: ['token:create', 'token:use', 'proxy:invoke'], rules });
  const caller = await vault.authenticate(app.key);
  const card = await vault.tokens.create(caller, { type: 'card', data: CARD });
  const secret = await vault.tokens.create(caller, { type: 'token', data: 'sk_test_4eC39HqLyjWDarjtT1zdp7dc' });
  const destination_url = `http://127.0.0.1:${destinationPort}`;
  const keyed = await vault.proxies.create(admin, { name: 'keyed', destination_url });
  const tokenizer = await vault.applications.create(admin, {
    name: 'tokenizer',
    type: 'private',
    permissions: ['token:create'],
    rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create'] }],
  });
  const inbound = await vault.proxies.create(admin, {
    name: 'inbound',
    destination_url,
    require_auth: false,
    application: { id: tokenizer.id },
    request_transforms: [{ type: 'tokenize', expression: '{ "type": "card", "data": "{{ args.card }}" }' }],
  });
  const coded = await vault.proxies.create(admin, {
    name: 'code',
    destination_url,
    request_transforms: [{ type: 'code', code: CODE }],
    configuration: { API_KEY: 'sk_test_4eC39HqLyjWDarjtT1zdp7dc' },
  });
  const server = createServer(toNodeListener(createFetchHandler(vault, { headerPrefix: 'BT' })));
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.stdout.write(
    `${JSON.stringify({ port: server.address().port, key: app.key, card: card.id, secret: secret.id, keys: { keyed: keyed.key, inbound: inbound.key, code: coded.key } })}\n`,
  );
  process.once('SIGTERM', async () => {
    server.close();
    await vault.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
}

async function startChild(kind, ...args) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve', kind, ...args.map(String)], { stdio: ['ignore', 'pipe', 'inherit'] });
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

/** One request; resolves with its duration in ms after the whole answer arrived (and was checked), and the answer. */
function timed(port, path, headers, payload) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 200)}`));
          else resolve({ ms: performance.now() - started, answer: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
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

const rate = (slices) => slices.reduce((s, x) => s + x.requests, 0) / slices.reduce((s, x) => s + x.seconds, 0);
const fmt = (ms) => `${ms.toFixed(2)} ms`;

/** One row: `call` and `direct` alternating (latency), then interleaved throughput slices. */
async function measure(call, direct, expect) {
  const { answer } = await timed(call.port, call.path, call.headers, call.body);
  const seen = JSON.parse(answer);
  for (const [name, value] of Object.entries(expect)) if (seen[name] !== value) throw new Error(`the destination saw ${name} ${seen[name]}, expected ${value}`);
  // Warm-up: JIT, the SQLite page cache, the key ring, the sandbox's workers.
  for (let i = 0; i < 200; i++) {
    await timed(direct.port, direct.path, direct.headers, direct.body);
    await timed(call.port, call.path, call.headers, call.body);
  }
  const d = [];
  const p = [];
  for (let i = 0; i < REQUESTS; i++) {
    d.push((await timed(direct.port, direct.path, direct.headers, direct.body)).ms);
    p.push((await timed(call.port, call.path, call.headers, call.body)).ms);
  }
  d.sort((a, b) => a - b);
  p.sort((a, b) => a - b);
  const rps = { direct: [], call: [] };
  for (let round = 0; round < SLICES; round++) {
    rps.direct.push(
      await throughput({ url: `http://127.0.0.1:${direct.port}${direct.path}`, headers: { ...direct.headers, 'content-type': 'application/json' }, body: direct.body }),
    );
    rps.call.push(await throughput({ url: `http://127.0.0.1:${call.port}${call.path}`, headers: { ...call.headers, 'content-type': 'application/json' }, body: call.body }));
  }
  const bad = [...rps.direct, ...rps.call].reduce((s, x) => s + x.bad, 0);
  const figures = (sorted, slices) => ({ p50: percentile(sorted, 50), p99: percentile(sorted, 99), rps: rate(slices) });
  return { direct: figures(d, rps.direct), proxy: figures(p, rps.call), overhead: percentile(p, 50) - percentile(d, 50), bad };
}

/** Runs the proxy benchmark and prints the figures. */
export async function run() {
  const only = process.env.BENCH_PROXY_ROWS?.split(',');
  console.log(`\n== proxy (1 KB JSON) vs the destination directly; per row ${REQUESTS} sequential requests each, then ${CONNECTIONS} connections for ${SECONDS} s each ==`);
  const destination = await startChild('destination');
  const vault = await startChild('vault', destination.port);
  try {
    const cleartext = body(CARD.number, 'sk_test_4eC39HqLyjWDarjtT1zdp7dc');
    const expressions = body(`{{ ${vault.card} | json: '$.number' }}`, `{{ ${vault.secret} }}`);
    const direct = { port: destination.port, path: '/v1/charges', headers: {}, body: cleartext };
    const at = (headers, payload) => ({ port: vault.port, path: '/proxy/v1/charges', headers, body: payload });
    const withCard = body(CARD, 'sk_test_4eC39HqLyjWDarjtT1zdp7dc');
    const rows = [
      {
        id: 'ephemeral',
        name: 'proxy overhead p50 (ms)',
        label: 'ephemeral /proxy, 2 tokens',
        target: 2,
        expect: { card: 'number', authorized: false },
        call: at({ 'BT-API-KEY': vault.key, 'BT-PROXY-URL': `http://127.0.0.1:${destination.port}` }, expressions),
        direct,
      },
      {
        id: 'keyed',
        name: 'keyed proxy overhead p50 (ms)',
        label: 'keyed, API key, 2 tokens, no transforms',
        expect: { card: 'number', authorized: false },
        call: at({ 'BT-API-KEY': vault.key, 'BT-PROXY-KEY': vault.keys.keyed }, expressions),
        direct,
      },
      {
        id: 'tokenize',
        name: 'inbound tokenize overhead p50 (ms)',
        label: 'inbound (proxy key only), request tokenize of 1 card',
        expect: { card: 'token id' },
        call: at({ 'BT-PROXY-KEY': vault.keys.inbound }, withCard),
        direct: { ...direct, body: withCard },
      },
      {
        id: 'code',
        name: 'keyed code transform overhead p50 (ms)',
        label: 'keyed, API key, 2 tokens, request code transform',
        expect: { card: 'number', authorized: true },
        call: at({ 'BT-API-KEY': vault.key, 'BT-PROXY-KEY': vault.keys.code }, expressions),
        direct,
      },
    ].filter((row) => only === undefined || only.includes(row.id));
    const results = [];
    for (const row of rows) {
      const r = await measure(row.call, row.direct, row.expect);
      const verdict = row.target === undefined ? '' : ` (target ≤ ${row.target} ms) ${r.overhead <= row.target ? 'ok' : 'ABOVE TARGET'}`;
      console.log(`${row.label}: overhead p50 ${fmt(r.overhead)}${verdict}`);
      console.log(`  direct      p50 ${fmt(r.direct.p50)}  p99 ${fmt(r.direct.p99)}  ${r.direct.rps.toFixed(0)} req/s`);
      console.log(`  via proxy   p50 ${fmt(r.proxy.p50)}  p99 ${fmt(r.proxy.p99)}  ${r.proxy.rps.toFixed(0)} req/s`);
      if (r.bad > 0) console.log(`  non-2xx/errors/timeouts: ${r.bad}`);
      results.push({ name: row.name, overhead: r.overhead, direct: r.direct, proxy: r.proxy });
    }
    return results;
  } finally {
    agent.destroy();
    await stopChild(vault.child);
    await stopChild(destination.child);
  }
}

if (process.argv[2] === '--serve') {
  await (process.argv[3] === 'destination' ? serveDestination() : serveVault(Number(process.argv[4])));
} else if (import.meta.url === `file://${process.argv[1]}`) {
  await run();
}
