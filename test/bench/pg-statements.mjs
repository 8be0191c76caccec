// PostgreSQL statements and CPU per request of each hot path (docs/performance.md):
// GET /tokens/{id}, POST /tokens, GET /tokens (list), POST /tokens/search, POST /reactors/{id}/react.
// Each build under test runs as `tokenvault serve --postgres` (access log off) with
// pg-count-preload.mjs loaded, which counts every statement the process sends (BEGIN and COMMIT
// included). Per path and build: requests one at a time (the statements each request sends), then
// autocannon with 32 connections (statements per request under load, where reads and creations of
// one turn share a statement and audit entries go out in batches; and the CPU per request of the
// tokenvault process and of the PostgreSQL backends serving its connections, from /proc). The builds'
// slices are interleaved, so a busy machine slows all alike: compare builds within one run.
//   node test/bench/pg-statements.mjs [dist …]     (default: this checkout's dist)
// BENCH_HTTP_SECONDS (default 8) per path and build under load; PG_STATEMENTS_PATHS=GET,POST (a
// comma-separated subset of GET,POST,list,search,react) measures only those; PG_STATEMENTS_VERBOSE=1
// lists the statements by kind. Needs PostgreSQL on this machine (TOKENVAULT_BENCH_PG_URL or TOKENVAULT_TEST_PG_URL).
import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backendPids, cpuSeconds } from './table.mjs';
import { CARD, startCountedServe, takeCounts } from './pg-counted-serve.mjs';

const PG_URL = process.env.TOKENVAULT_BENCH_PG_URL ?? process.env.TOKENVAULT_TEST_PG_URL;
const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 8);
const SLICES = 4;
const CONNECTIONS = 32;
const SEQUENTIAL = 50;

async function startServe(dist, dir, n) {
  const server = await startCountedServe(dist, PG_URL, dir, n);
  const paths = {
    GET: { method: 'GET', path: `/tokens/${server.tokenId}` },
    POST: { method: 'POST', path: '/tokens', body: JSON.stringify({ type: 'card', data: CARD, deduplicate_token: false }) },
    list: { method: 'GET', path: '/tokens?size=10' },
    search: { method: 'POST', path: '/tokens/search', body: JSON.stringify({ query: 'type:card', size: 10 }) },
    react: { method: 'POST', path: `/reactors/${server.reactorId}/react`, body: JSON.stringify({ args: { card: `{{ ${server.tokenId} }}` } }) },
  };
  return { ...server, paths };
}

const total = (counts) => Object.values(counts).reduce((s, n) => s + n, 0);

async function sequential(server, name) {
  const { method, path, body } = server.paths[name];
  const send = async () => {
    const response = await fetch(server.url + path, { method, headers: { 'SVC-API-KEY': server.key, 'content-type': 'application/json' }, body });
    await response.arrayBuffer();
    if (response.status >= 300) throw new Error(`${name}: ${response.status}`);
  };
  await send();
  await takeCounts(server);
  for (let i = 0; i < SEQUENTIAL; i++) await send();
  return total(await takeCounts(server)) / SEQUENTIAL;
}

async function loaded(server, pool, name, seconds) {
  const { default: autocannon } = await import('autocannon');
  const { method, path, body } = server.paths[name];
  const pids = [server.child.pid, ...(await backendPids(pool, server.child.pid))];
  await takeCounts(server);
  const before = cpuSeconds(pids);
  const ownBefore = cpuSeconds(pids.slice(0, 1));
  const result = await autocannon({
    url: server.url + path,
    connections: CONNECTIONS,
    duration: seconds,
    method,
    headers: { 'SVC-API-KEY': server.key, 'content-type': 'application/json' },
    ...(body ? { body } : {}),
  });
  const cpu = cpuSeconds(pids) - before;
  const own = cpuSeconds(pids.slice(0, 1)) - ownBefore;
  const counts = await takeCounts(server);
  return { requests: result.requests.total, seconds: result.duration, cpu, own, counts, bad: result.non2xx + result.errors + result.timeouts };
}

async function main() {
  if (!PG_URL) throw new Error('set TOKENVAULT_BENCH_PG_URL or TOKENVAULT_TEST_PG_URL');
  const dists = (process.argv.length > 2 ? process.argv.slice(2) : [fileURLToPath(new URL('../../dist', import.meta.url))]).map((d) => resolve(d));
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-pg-statements-'));
  const servers = [];
  try {
    for (const [n, dist] of dists.entries()) servers.push(await startServe(dist, dir, n));
    console.log(
      `== PostgreSQL statements and CPU per request: ${SEQUENTIAL} requests one at a time, then autocannon ${CONNECTIONS} connections, ${SECONDS} s per path and build (${SLICES} interleaved slices) ==`,
    );
    for (const name of (process.env.PG_STATEMENTS_PATHS ?? 'GET,POST,list,search,react').split(',')) {
      const one = [];
      for (const server of servers) one.push(await sequential(server, name));
      for (const server of servers) await loaded(server, pool, name, 1);
      const runs = servers.map(() => []);
      for (let round = 0; round < SLICES; round++) for (const [i, server] of servers.entries()) runs[i].push(await loaded(server, pool, name, SECONDS / SLICES));
      for (const [i, server] of servers.entries()) {
        const slices = runs[i];
        const requests = slices.reduce((s, x) => s + x.requests, 0);
        const counts = {};
        for (const x of slices) for (const [kind, c] of Object.entries(x.counts)) counts[kind] = (counts[kind] ?? 0) + c;
        const per = (x) => (x / Math.max(requests, 1)).toFixed(3);
        const cpu = slices.reduce((s, x) => s + x.cpu, 0) * 1000;
        const own = slices.reduce((s, x) => s + x.own, 0) * 1000;
        const rps = requests / slices.reduce((s, x) => s + x.seconds, 0);
        const bad = slices.reduce((s, x) => s + x.bad, 0);
        console.log(
          `${name.padEnd(6)} ${server.dist}: one at a time ${one[i].toFixed(2)} statements/request; under load ${per(total(counts))} statements/request, ` +
            `CPU ms/request tokenvault ${per(own)} + backends ${per(cpu - own)}, ${rps.toFixed(0)} req/s${bad ? ` (non-2xx/errors ${bad})` : ''}`,
        );
        if (process.env.PG_STATEMENTS_VERBOSE) for (const [kind, c] of Object.entries(counts).sort((a, b) => b[1] - a[1])) console.log(`         ${per(c)}  ${kind}`);
      }
    }
  } finally {
    for (const { child } of servers) {
      if (child.exitCode !== null) continue;
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    for (const { schema } of servers) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
