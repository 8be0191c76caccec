// Asynchronous reactor invocation over HTTP: the real `tokenvault serve` (dist/) on a temp SQLite file.
//   accepted/s  POST /reactors/{id}/react-async with autocannon (target ≥ 200/s on a 2-core machine),
//               beside the synchronous POST /reactors/{id}/react in the same run (the baseline);
//   latency     accept → signed callback received by a local receiver, p50 and p99 over sequential
//               invocations with callback_url (target p50 < 50 ms).
// The server's job worker runs the accepted runs meanwhile, as in production. Run after a build:
// `node test/bench/async.mjs` (also part of `npm run bench`). BENCH_HTTP_SECONDS (default 8).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 8);
const CONNECTIONS = 20;
const LATENCY_RUNS = 200;
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

async function serve(dir, env) {
  const cli = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', '--db', join(dir, 'bench.db'), '--allow-private-network', '--access-log', 'off'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let out = '';
  let errors = '';
  child.stderr.on('data', (chunk) => (errors += chunk));
  let url;
  for await (const chunk of child.stdout) {
    out += chunk;
    url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
    if (url) break;
  }
  if (!url) throw new Error(`tokenvault serve did not start:\n${out}\n${errors}`);
  child.stdout.resume();
  return { child, url };
}

async function call(url, key, path, body) {
  const response = await fetch(url + path, { method: 'POST', headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** A receiver that resolves the waiter of each request id when its callback arrives. */
async function receiver() {
  const waiting = new Map();
  const early = new Map(); // callbacks that came before their waiter
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      res.writeHead(204).end();
      const id = JSON.parse(Buffer.concat(chunks).toString('utf8')).data?.request_id;
      const waiter = waiting.get(id);
      if (waiter) waiter(at);
      else early.set(id, at);
      waiting.delete(id);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${server.address().port}/hooks`,
    arrival: (id) => (early.has(id) ? Promise.resolve(early.get(id)) : new Promise((resolve) => waiting.set(id, resolve))),
    close: () => server.close(),
  };
}

async function rate(url, path, key, body) {
  const { default: autocannon } = await import('autocannon');
  const result = await autocannon({
    url: url + path,
    connections: CONNECTIONS,
    duration: SECONDS,
    method: 'POST',
    headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
    body,
  });
  return { rps: result.requests.total / result.duration, p99: result.latency.p99, bad: result.non2xx + result.errors + result.timeouts };
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Runs the benchmark and prints its figures. */
export async function run() {
  console.log(`\n== async reactor invocation: autocannon ${CONNECTIONS} connections, ${SECONDS} s; ${LATENCY_RUNS} sequential callbacks ==`);
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-async-bench-'));
  const adminKey = `bench-admin-${randomBytes(16).toString('hex')}`;
  const { child, url } = await serve(dir, { TOKENVAULT_ADMIN_KEY: adminKey, TOKENVAULT_MASTER_KEY: randomBytes(32).toString('base64') });
  const hooks = await receiver();
  try {
    const app = await call(url, adminKey, '/applications', { name: 'bench', type: 'private', permissions: ['token:create', 'token:read', 'token:use'] });
    const token = await call(url, app.key, '/tokens', { type: 'card', data: CARD });
    const formula = await call(url, adminKey, '/reactor-formulas', {
      name: 'bench',
      code: 'module.exports = async function (req) { return { raw: { last4: String(req.args.card.number).slice(-4) } }; };',
      configuration: [],
      request_parameters: [{ name: 'card', type: 'object' }],
    });
    const reactor = await call(url, adminKey, '/reactors', { name: 'bench', formula: { id: formula.id }, configuration: {} });
    const args = { card: `{{ ${token.id} }}` };
    const sync = await rate(url, `/reactors/${reactor.id}/react`, app.key, JSON.stringify({ args }));
    const accepted = await rate(url, `/reactors/${reactor.id}/react-async`, app.key, JSON.stringify({ args }));
    // Let the backlog of accepted runs drain before timing callbacks one by one.
    const drain = await call(url, app.key, `/reactors/${reactor.id}/react`, { args, callback_url: hooks.url });
    await hooks.arrival(drain.id);
    const latencies = [];
    for (let i = 0; i < LATENCY_RUNS; i++) {
      const started = performance.now();
      const response = await fetch(`${url}/reactors/${reactor.id}/react`, {
        method: 'POST',
        headers: { 'SVC-API-KEY': app.key, 'content-type': 'application/json' },
        body: JSON.stringify({ args, callback_url: hooks.url }),
      });
      const { id } = await response.json();
      const arrived = hooks.arrival(id);
      latencies.push((await arrived) - started);
    }
    latencies.sort((a, b) => a - b);
    const p50 = percentile(latencies, 50);
    console.log(`  synchronous react        ${sync.rps.toFixed(0).padStart(6)} req/s  p99 ${sync.p99} ms${sync.bad ? `  non-2xx ${sync.bad}` : ''}`);
    console.log(
      `  react-async (accepted)   ${accepted.rps.toFixed(0).padStart(6)} req/s  p99 ${accepted.p99} ms${accepted.bad ? `  non-2xx ${accepted.bad}` : ''}  (target ≥ 200/s: ${accepted.rps >= 200 ? 'ok' : 'BELOW TARGET'})`,
    );
    console.log(`  accept → callback        p50 ${p50.toFixed(1)} ms  p99 ${percentile(latencies, 99).toFixed(1)} ms  (target p50 < 50 ms: ${p50 < 50 ? 'ok' : 'ABOVE TARGET'})`);
    return { sync, accepted, p50, p99: percentile(latencies, 99) };
  } finally {
    hooks.close();
    child.kill('SIGTERM');
    await once(child, 'exit');
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
