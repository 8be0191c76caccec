// HTTP benchmark on PostgreSQL: the real `tokenvault serve` (built CLI) on one PostgreSQL database,
// one instance and two instances sharing it, beside one instance on a SQLite file in the same run.
//   GET /tokens/{id}, POST /tokens (card), and, when the build has asynchronous invocation,
//   POST /reactors/{id}/react-async (accepted/s; the job worker of each instance runs the reactors
//   meanwhile, as it would in production).
// Two instances are driven "behind a trivial round-robin": half of the connections go to each.
// Server CPU per request is read from /proc (user + system time during the slice, divided by the
// requests answered), so it tells cost apart from the client's share of the two cores: the
// tokenvault processes', and the database side's (every process of this machine named postgres or
// pgbouncer: the backends, the pooler and PostgreSQL's own writers; so run it where nothing else
// uses PostgreSQL). Slices are interleaved (sqlite, pg×1, pg×2, sqlite, …) so a busy machine slows all alike.
// Run after a build: `node test/bench/http-postgres.mjs` (also part of `npm run bench` when
// TOKENVAULT_BENCH_PG_URL or TOKENVAULT_TEST_PG_URL is set). BENCH_HTTP_SECONDS (default 8) per
// configuration and endpoint. With TOKENVAULT_BENCH_PGBOUNCER_URL (or TOKENVAULT_TEST_PGBOUNCER_URL:
// a PgBouncer in transaction mode in front of the same database, docs/scaling.md), one and two
// more instances on the same schema through the pooler join the interleaving. BENCH_PG_FLAGS adds
// comma-separated flags to the direct instances (e.g. --postgres-prepared-statements,off).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds } from './table.mjs';

const PG_URL = process.env.TOKENVAULT_BENCH_PG_URL ?? process.env.TOKENVAULT_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const PGBOUNCER_URL = process.env.TOKENVAULT_BENCH_PGBOUNCER_URL ?? process.env.TOKENVAULT_TEST_PGBOUNCER_URL;
const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 8);
const SLICES = 4;
const CONNECTIONS = 50;
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

/** Starts `tokenvault serve` with these store flags; resolves when it listens. */
async function serve(storeFlags, env) {
  const cli = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', ...storeFlags], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
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

async function call(url, key, path, body, method = 'POST') {
  const response = await fetch(url + path, {
    method,
    headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? null : response.json();
}

/** An application, a card token and (when available) an async-invocable reactor, made through `url`. */
async function bootstrap(url, adminKey) {
  const app = await call(url, adminKey, '/applications', { name: 'bench', type: 'private', permissions: ['token:create', 'token:read', 'token:use'] });
  const token = await call(url, app.key, '/tokens', { type: 'card', data: CARD });
  const formula = await call(url, adminKey, '/reactor-formulas', {
    name: 'bench',
    code: 'module.exports = async function (req) { return { raw: { last4: String(req.args.card.number).slice(-4) } }; };',
    configuration: [],
    request_parameters: [{ name: 'card', type: 'object' }],
  });
  const reactor = await call(url, adminKey, '/reactors', { name: 'bench', formula: { id: formula.id }, configuration: {} });
  const asyncBody = JSON.stringify({ args: { card: `{{ ${token.id} }}` } });
  const probe = await fetch(`${url}/reactors/${reactor.id}/react-async`, {
    method: 'POST',
    headers: { 'SVC-API-KEY': app.key, 'content-type': 'application/json' },
    body: asyncBody,
  });
  return { key: app.key, getPath: `/tokens/${token.id}`, asyncPath: probe.status === 202 ? `/reactors/${reactor.id}/react-async` : null, asyncBody };
}

/** The processes of the database side: PostgreSQL's (backends and its own) and PgBouncer's. */
function databasePids() {
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const name = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      if (name === 'postgres' || name === 'pgbouncer') pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** One slice against a configuration: its connections split evenly over its instances. */
async function slice(config, endpoint, seconds) {
  const { default: autocannon } = await import('autocannon');
  const path = endpoint === 'GET' ? config.paths.getPath : endpoint === 'POST' ? '/tokens' : config.paths.asyncPath;
  const body = endpoint === 'GET' ? undefined : endpoint === 'POST' ? JSON.stringify({ type: 'card', data: CARD, deduplicate_token: false }) : config.paths.asyncBody;
  const headers = { 'SVC-API-KEY': config.paths.key, ...(body ? { 'content-type': 'application/json' } : {}) };
  const pids = config.instances.map((i) => i.child.pid);
  const database = databasePids();
  const cpuBefore = cpuSeconds(pids);
  const databaseBefore = cpuSeconds(database);
  const results = await Promise.all(
    config.instances.map((instance) =>
      autocannon({
        url: instance.url + path,
        connections: CONNECTIONS / config.instances.length,
        duration: seconds,
        method: endpoint === 'GET' ? 'GET' : 'POST',
        headers,
        ...(body ? { body } : {}),
      }),
    ),
  );
  const cpu = cpuSeconds(pids) - cpuBefore;
  // A backend that ended during the slice takes its CPU with it; the pools keep theirs open.
  const databaseCpu = config.usesDatabase ? cpuSeconds(database) - databaseBefore : 0;
  const requests = results.reduce((sum, r) => sum + r.requests.total, 0);
  return {
    requests,
    seconds: Math.max(...results.map((r) => r.duration)),
    cpu,
    databaseCpu,
    p99: Math.max(...results.map((r) => r.latency.p99)),
    bad: results.reduce((s, r) => s + r.non2xx + r.errors + r.timeouts, 0),
  };
}

async function measure(configs, endpoint) {
  const runs = configs.map(() => []);
  for (let round = 0; round < SLICES; round++) {
    for (let i = 0; i < configs.length; i++) runs[i].push(await slice(configs[i], endpoint, SECONDS / SLICES));
  }
  return runs.map((slices) => {
    const requests = slices.reduce((s, x) => s + x.requests, 0);
    const p99s = slices.map((s) => s.p99).sort((a, b) => a - b);
    return {
      rps: requests / slices.reduce((s, x) => s + x.seconds, 0),
      cpuMsPerRequest: (slices.reduce((s, x) => s + x.cpu, 0) * 1000) / Math.max(requests, 1),
      databaseMsPerRequest: (slices.reduce((s, x) => s + x.databaseCpu, 0) * 1000) / Math.max(requests, 1),
      p99: p99s[Math.floor(p99s.length / 2)],
      bad: slices.reduce((s, x) => s + x.bad, 0),
    };
  });
}

/** Runs the benchmark and prints one line per configuration and endpoint. */
export async function run() {
  console.log(`\n== http on PostgreSQL: autocannon, ${CONNECTIONS} connections, ${SECONDS} s per configuration and endpoint (${SLICES} interleaved slices) ==`);
  const adminKey = `bench-admin-${randomBytes(16).toString('hex')}`;
  const env = { TOKENVAULT_ADMIN_KEY: adminKey, TOKENVAULT_MASTER_KEY: randomBytes(32).toString('base64') };
  const schema = `tv_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-pg-bench-'));
  const pgFlags = ['--postgres', PG_URL, '--postgres-schema', schema, ...(process.env.BENCH_PG_FLAGS ? process.env.BENCH_PG_FLAGS.split(',') : [])];
  const started = [];
  try {
    const sqlite = await serve(['--db', join(dir, 'bench.db')], env);
    started.push(sqlite);
    const pgA = await serve(pgFlags, env);
    started.push(pgA);
    const pgB = await serve(pgFlags, env);
    started.push(pgB);
    const sqlitePaths = await bootstrap(sqlite.url, adminKey);
    const pgPaths = await bootstrap(pgA.url, adminKey);
    const configs = [
      { name: 'SQLite, 1 instance     ', instances: [sqlite], paths: sqlitePaths },
      { name: 'PostgreSQL, 1 instance ', instances: [pgA], paths: pgPaths, usesDatabase: true },
      { name: 'PostgreSQL, 2 instances', instances: [pgA, pgB], paths: pgPaths, usesDatabase: true },
    ];
    if (PGBOUNCER_URL) {
      // As docs/scaling.md starts instances behind PgBouncer 1.18, which loses named statements.
      const pooled = ['--postgres', PGBOUNCER_URL, '--postgres-schema', schema, '--postgres-prepared-statements', 'off'];
      const poolA = await serve(pooled, env);
      started.push(poolA);
      const poolB = await serve(pooled, env);
      started.push(poolB);
      configs.push(
        { name: 'PgBouncer, 1 instance  ', instances: [poolA], paths: pgPaths, usesDatabase: true },
        { name: 'PgBouncer, 2 instances ', instances: [poolA, poolB], paths: pgPaths, usesDatabase: true },
      );
    }
    const endpoints = [
      ['GET', 'GET /tokens/{id}'],
      ['POST', 'POST /tokens (card)'],
      ...(sqlitePaths.asyncPath && pgPaths.asyncPath ? [['ASYNC', 'POST /reactors/{id}/react-async (accepted)']] : []),
    ];
    const figures = {};
    for (const [endpoint, label] of endpoints) {
      const results = await measure(configs, endpoint);
      console.log(label);
      results.forEach((r, i) => {
        console.log(
          `  ${configs[i].name} ${r.rps.toFixed(0).padStart(6)} req/s  p99 ${String(r.p99).padStart(4)} ms  server CPU ${(r.cpuMsPerRequest + r.databaseMsPerRequest).toFixed(3)} ms/request (tokenvault ${r.cpuMsPerRequest.toFixed(3)} + database ${r.databaseMsPerRequest.toFixed(3)})${r.bad ? `  non-2xx/errors ${r.bad}` : ''}`,
        );
      });
      const [one, two] = [results[1].rps, results[2].rps];
      console.log(`  PostgreSQL 2 instances / 1 instance: ${(two / one).toFixed(2)}x; 1 instance PostgreSQL / SQLite: ${((one / results[0].rps) * 100).toFixed(0)}%`);
      if (results[3])
        console.log(`  through PgBouncer, of direct: 1 instance ${((results[3].rps / one) * 100).toFixed(0)}%, 2 instances ${((results[4].rps / two) * 100).toFixed(0)}%`);
      figures[endpoint] = results;
    }
    if (!sqlitePaths.asyncPath) console.log('  (this build has no POST /reactors/{id}/react-async: async figures skipped)');
    return figures;
  } finally {
    for (const { child } of started) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    rmSync(dir, { recursive: true, force: true });
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => pool.end());
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
