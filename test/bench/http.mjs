// HTTP benchmark: the tokenvault server (createFetchHandler + toNodeListener on a file-backed SQLite
// database) against a bare node:http JSON server, both measured in the same run with autocannon.
//   GET /tokens/{id}  (a card token, masked by the caller's default rules)   target ≥ 40% of bare
//   POST /tokens      (a card, deduplicate_token false, the same body each time) target ≥ 25% of bare
// Each server runs in its own child process (one core each at most); autocannon runs here.
// Run after a build: `npm run bench` (or `node test/bench/http.mjs`). BENCH_HTTP_SECONDS overrides 8.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 8);
const CONNECTIONS = 50;
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const CREATE_BODY = JSON.stringify({ type: 'card', data: CARD, deduplicate_token: false });

// --- child processes ---------------------------------------------------------------------------

/** A bare node:http JSON server: GET answers a token-sized object, POST parses the body and echoes an id. */
async function serveBare() {
  const token = { id: 'b1c2', type: 'card', tenant_id: 't', data: { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 }, containers: ['/pci/high/'], metadata: {}, created_at: new Date().toISOString() };
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

/** The tokenvault server on a temp SQLite file (WAL; synchronous from BENCH_SYNCHRONOUS, default normal). */
async function serveVault() {
  const { createVault, generateMasterKey } = await import('../../dist/index.js');
  const { createSqliteStore } = await import('../../dist/sqlite.js');
  const { createFetchHandler } = await import('../../dist/http.js');
  const { toNodeListener } = await import('../../dist/node.js');
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-http-bench-'));
  const synchronous = process.env.BENCH_SYNCHRONOUS ?? 'normal';
  const vault = await createVault({ store: createSqliteStore({ filename: join(dir, 'bench.db'), synchronous }), masterKey: generateMasterKey(), sweepIntervalMs: 0 });
  const { application } = await vault.createTenant({ name: 'bench' });
  const admin = await vault.authenticate(application.key);
  const app = await vault.applications.create(admin, { name: 'bench', type: 'private', permissions: ['token:create', 'token:read'] });
  const caller = await vault.authenticate(app.key);
  const token = await vault.tokens.create(caller, { type: 'card', data: CARD });
  const server = createServer(toNodeListener(createFetchHandler(vault)));
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

async function measure(target, method) {
  const { default: autocannon } = await import('autocannon');
  const headers = { 'SVC-API-KEY': target.key };
  const options = { url: `http://127.0.0.1:${target.port}${method === 'GET' ? target.path : '/tokens'}`, connections: CONNECTIONS, duration: SECONDS, method, headers };
  if (method === 'POST') {
    headers['content-type'] = 'application/json';
    options.body = CREATE_BODY;
  }
  const result = await autocannon(options);
  const bad = result.non2xx + result.errors + result.timeouts;
  return { rps: result.requests.average, p99: result.latency.p99, bad };
}

function line(name, ours, bare, target) {
  const ratio = ours.rps / bare.rps;
  const verdict = ratio >= target ? 'ok' : 'BELOW TARGET';
  console.log(
    `${name.padEnd(22)} tokenvault ${ours.rps.toFixed(0).padStart(6)} req/s p99 ${String(ours.p99).padStart(4)} ms` +
      ` | bare ${bare.rps.toFixed(0).padStart(6)} req/s p99 ${String(bare.p99).padStart(4)} ms` +
      ` | ratio ${(ratio * 100).toFixed(0).padStart(3)}% (target ≥ ${target * 100}%) ${verdict}` +
      (ours.bad + bare.bad > 0 ? ` | non-2xx/errors: ${ours.bad}/${bare.bad}` : ''),
  );
  return { name, ours, bare, ratio, target };
}

/** Runs the HTTP benchmark and prints one line per endpoint. */
export async function run() {
  console.log(`\n== http: autocannon, ${CONNECTIONS} connections, ${SECONDS} s per run, servers in child processes ==`);
  const bare = await startChild('bare');
  const vault = await startChild('vault');
  try {
    const bareGet = await measure(bare, 'GET');
    const vaultGet = await measure(vault, 'GET');
    const barePost = await measure(bare, 'POST');
    const vaultPost = await measure(vault, 'POST');
    const results = [line('GET /tokens/{id}', vaultGet, bareGet, 0.4), line('POST /tokens (card)', vaultPost, barePost, 0.25)];
    console.log(`  (SQLite synchronous=${process.env.BENCH_SYNCHRONOUS ?? 'normal'}; set BENCH_SYNCHRONOUS=full for per-commit fsync)`);
    return results;
  } finally {
    await stopChild(bare.child);
    await stopChild(vault.child);
  }
}

if (process.argv[2] === '--serve') {
  await (process.argv[3] === 'bare' ? serveBare() : serveVault());
} else if (import.meta.url === `file://${process.argv[1]}`) {
  await run();
}
