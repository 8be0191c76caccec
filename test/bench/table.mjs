// The table, each row measured beside its baseline in the same run, as ratios:
//   1. GET /tokens/{id} of `tokenvault serve` as a user starts it (defaults: access log on, SQLite
//      file, synchronous full), of a bare node:http JSON server in its own process
//   2. POST /tokens (card), the same two servers
//   3. GET with the default access log, of the same server with `--access-log off`
//   4. PostgreSQL server CPU per request, of SQLite's (GET / POST, one instance each, access log off);
//      beside it, not a row of the issue, the same with --postgres-prepared-statements off (unnamed
//      statements, as behind a pooler that loses prepared ones)
//   5. reactor invoke p50 on the worker pool, of a raw QuickJS context + eval (test/bench/reactors.mjs)
//   6. reactor invocations/s with 16 in flight, of 1 in flight (test/bench/reactors.mjs)
// autocannon with 32 connections; the servers run in child processes, interleaved in short slices
// (bare, default, quiet, bare, …) so that a busy machine slows all alike. The machine is shared:
// compare ratios from one run, not absolute figures across runs.
// Server CPU per request: user + system time from /proc/<pid>/stat over a slice, divided by the
// requests answered. On PostgreSQL it is the tokenvault process plus the PostgreSQL backends serving
// its connections (found by matching the process's TCP sockets, /proc/<pid>/fd and /proc/net/tcp, to
// pg_stat_activity.client_port); so it needs PostgreSQL on this machine.
// BENCH_DIST=<dist> measures another build (e.g. main's, for the "before" column); BENCH_HTTP_SECONDS
// (default 8) is the measuring time per server and row. Row 4 runs when TOKENVAULT_BENCH_PG_URL or
// TOKENVAULT_TEST_PG_URL names a server.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServe as startServeBuild } from './http.mjs';

const DIST = process.env.BENCH_DIST ? resolve(process.env.BENCH_DIST) : fileURLToPath(new URL('../../dist', import.meta.url));
const PG_URL = process.env.TOKENVAULT_BENCH_PG_URL ?? process.env.TOKENVAULT_TEST_PG_URL;
const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 8);
const SLICES = 4;
const CONNECTIONS = 32;
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const CREATE_BODY = JSON.stringify({ type: 'card', data: CARD, deduplicate_token: false });
const CLOCK_TICKS = 100; // USER_HZ on Linux

/** CPU seconds (user + system) of these processes. */
export function cpuSeconds(pids) {
  let ticks = 0;
  for (const pid of pids) {
    if (!existsSync(`/proc/${pid}/stat`)) continue;
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / CLOCK_TICKS;
}

/** The local TCP ports of a process's connections to port `remotePort` (Linux /proc). */
function connectedPorts(pid, remotePort) {
  const inodes = new Set();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (link.startsWith('socket:[')) inodes.add(link.slice(8, -1));
    } catch {
      // closed meanwhile
    }
  }
  const ports = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(table)) continue;
    for (const row of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = row.trim().split(/\s+/);
      if (cols.length < 10 || !inodes.has(cols[9])) continue;
      if (Number.parseInt(cols[2].split(':')[1], 16) === remotePort) ports.push(Number.parseInt(cols[1].split(':')[1], 16));
    }
  }
  return ports;
}

/** The PostgreSQL backend pids serving a tokenvault process's pool. */
export async function backendPids(pool, pid) {
  const port = Number(new URL(PG_URL).port || 5432);
  const ports = connectedPorts(pid, port);
  if (ports.length === 0) return [];
  const { rows } = await pool.query('SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[])', [ports]);
  return rows.map((r) => r.pid);
}

/** `tokenvault serve` of the build under test, with these flags (http.mjs startServe), and the pids whose CPU it costs. */
async function startServe(flags) {
  const server = await startServeBuild(join(DIST, 'cli.js'), flags);
  return { ...server, pids: async () => [server.child.pid] };
}

/** The bare node:http baseline (http.mjs --serve bare) in its own process. */
export async function startBare() {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./http.mjs', import.meta.url)), '--serve', 'bare'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  for await (const chunk of child.stdout) {
    out += chunk;
    if (out.includes('\n')) break;
  }
  const { port, path } = JSON.parse(out.split('\n')[0]);
  return { child, url: `http://127.0.0.1:${port}`, path, key: 'none', pids: async () => [child.pid] };
}

async function slice(target, method, seconds) {
  const { default: autocannon } = await import('autocannon');
  const options = {
    url: target.url + (method === 'GET' ? target.path : '/tokens'),
    connections: CONNECTIONS,
    duration: seconds,
    method,
    headers: { 'SVC-API-KEY': target.key, 'content-type': 'application/json' },
  };
  if (method === 'POST') options.body = CREATE_BODY;
  const pids = await target.pids();
  const before = cpuSeconds(pids);
  const ownBefore = cpuSeconds(pids.slice(0, 1));
  const result = await autocannon(options);
  const cpu = cpuSeconds(pids) - before;
  const own = cpuSeconds(pids.slice(0, 1)) - ownBefore;
  return { requests: result.requests.total, seconds: result.duration, cpu, own, bad: result.non2xx + result.errors + result.timeouts };
}

/** Interleaved slices (after an uncounted warm-up slice each): req/s and server CPU ms per request. */
async function measure(targets, method) {
  for (const target of targets) await slice(target, method, 1);
  const runs = targets.map(() => []);
  for (let round = 0; round < SLICES; round++) {
    for (let i = 0; i < targets.length; i++) runs[i].push(await slice(targets[i], method, SECONDS / SLICES));
  }
  return runs.map((slices) => {
    const requests = slices.reduce((s, x) => s + x.requests, 0);
    return {
      rps: requests / slices.reduce((s, x) => s + x.seconds, 0),
      cpuMs: (slices.reduce((s, x) => s + x.cpu, 0) * 1000) / Math.max(requests, 1),
      ownCpuMs: (slices.reduce((s, x) => s + x.own, 0) * 1000) / Math.max(requests, 1),
      bad: slices.reduce((s, x) => s + x.bad, 0),
    };
  });
}

async function stopAll(targets) {
  for (const { child } of targets) {
    if (child.exitCode !== null) continue;
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

const fmt = (x) => x.toFixed(2);
const bad = (...runs) => (runs.some((r) => r.bad > 0) ? `  (non-2xx/errors: ${runs.map((r) => r.bad).join('/')})` : '');

/** Rows 1-3: bare, serve as started by default, serve with --access-log off. */
async function httpRows(dir, started) {
  const bare = await startBare();
  started.push(bare);
  const byDefault = await startServe(['--db', join(dir, 'default.db')]);
  started.push(byDefault);
  const quiet = await startServe(['--db', join(dir, 'quiet.db'), '--access-log', 'off']);
  started.push(quiet);
  const [bareGet, defaultGet, quietGet] = await measure([bare, byDefault, quiet], 'GET');
  const [barePost, defaultPost] = await measure([bare, byDefault], 'POST');
  // Beside each throughput ratio, the same ratio of server CPU per request (the baseline's over the
  // server's): steadier than req/s when other work shares the machine.
  const detail = (ours, base) =>
    `${ours.rps.toFixed(0)} / ${base.rps.toFixed(0)} req/s; by server CPU per request ${fmt(base.cpuMs / ours.cpuMs)} (${ours.cpuMs.toFixed(3)} / ${base.cpuMs.toFixed(3)} ms)${bad(ours, base)}`;
  return [
    ['GET /tokens/{id}, of bare node:http', fmt(defaultGet.rps / bareGet.rps), detail(defaultGet, bareGet)],
    ['POST /tokens, of bare node:http', fmt(defaultPost.rps / barePost.rps), detail(defaultPost, barePost)],
    ['GET with the default access log, of --access-log off', fmt(defaultGet.rps / quietGet.rps), detail(defaultGet, quietGet)],
  ];
}

/**
 * Row 4: one instance on PostgreSQL beside one on SQLite, access log off; and one started with
 * --postgres-prepared-statements off (in its own schema), when the build has that flag.
 */
async function postgresRows(dir, started) {
  const name = "PostgreSQL server CPU per request, of SQLite's (GET / POST)";
  if (!PG_URL) return [[name, 'skipped', 'set TOKENVAULT_BENCH_PG_URL or TOKENVAULT_TEST_PG_URL']];
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
  const schemas = [1, 2].map((i) => `tv_table_${process.pid}_${i}_${randomBytes(3).toString('hex')}`);
  const onPostgres = async (schema, flags = []) => {
    const server = await startServe(['--postgres', PG_URL, '--postgres-schema', schema, '--access-log', 'off', ...flags]);
    started.push(server);
    server.pids = async () => [server.child.pid, ...(await backendPids(pool, server.child.pid))];
    return server;
  };
  try {
    const sqlite = await startServe(['--db', join(dir, 'cpu.db'), '--access-log', 'off']);
    started.push(sqlite);
    const servers = [sqlite, await onPostgres(schemas[0])];
    // An older build (BENCH_DIST) without the flag measures the row alone.
    const unnamed = await onPostgres(schemas[1], ['--postgres-prepared-statements', 'off']).catch(() => null);
    if (unnamed) servers.push(unnamed);
    const [sqliteGet, ...getRuns] = await measure(servers, 'GET');
    const [sqlitePost, ...postRuns] = await measure(servers, 'POST');
    const row = (label, pgGet, pgPost) => [
      label,
      `${fmt(pgGet.cpuMs / sqliteGet.cpuMs)}x / ${fmt(pgPost.cpuMs / sqlitePost.cpuMs)}x`,
      `PostgreSQL: tokenvault ${pgGet.ownCpuMs.toFixed(3)} + backends ${(pgGet.cpuMs - pgGet.ownCpuMs).toFixed(3)} / ${pgPost.ownCpuMs.toFixed(3)} + ${(pgPost.cpuMs - pgPost.ownCpuMs).toFixed(3)} ms; ` +
        `SQLite ${sqliteGet.cpuMs.toFixed(3)} / ${sqlitePost.cpuMs.toFixed(3)} ms; ${pgGet.rps.toFixed(0)} / ${pgPost.rps.toFixed(0)} req/s on PostgreSQL, ${sqliteGet.rps.toFixed(0)} / ${sqlitePost.rps.toFixed(0)} on SQLite${bad(pgGet, pgPost)}`,
    ];
    const rows = [row(name, getRuns[0], postRuns[0])];
    if (unnamed) rows.push(row('  the same with --postgres-prepared-statements off', getRuns[1], postRuns[1]));
    return rows;
  } finally {
    await stopAll(started.splice(0));
    for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  }
}

/** Rows 5-6, from test/bench/reactors.mjs's figures. */
function reactorRows(figures) {
  const invoke = figures.find((r) => r.name === 'invoke 1 token / raw');
  const scaling = figures.find((r) => r.name === 'invocations/s 16 in flight / 1');
  return [
    ['reactor invoke p50 on the worker pool, of raw QuickJS context + eval', `${fmt(invoke.ratio)}x`, invoke.detail],
    ['reactor invocations/s with 16 in flight, of 1 in flight', fmt(scaling.ratio), scaling.detail],
  ];
}

/**
 * Measures and prints the table. `reactorFigures` are test/bench/reactors.mjs's results when
 * `npm run bench` ran it already; otherwise it runs here. BENCH_TABLE_ONLY=http|postgres|reactors
 * measures one part (while profiling).
 */
export async function run(reactorFigures) {
  console.log(`\n== the benchmark table: ${DIST}; autocannon ${CONNECTIONS} connections, ${SECONDS} s per server and row (${SLICES} interleaved slices) ==`);
  const only = process.env.BENCH_TABLE_ONLY;
  const rows = [];
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-table-'));
  const started = [];
  try {
    if (!only || only === 'http') rows.push(...(await httpRows(dir, started)));
    await stopAll(started.splice(0));
    if (!only || only === 'postgres') rows.push(...(await postgresRows(dir, started)));
  } finally {
    await stopAll(started);
    rmSync(dir, { recursive: true, force: true });
  }
  if (!only || only === 'reactors') rows.push(...reactorRows(reactorFigures ?? (await (await import('./reactors.mjs')).run())));
  console.log('\nthe benchmark table (ratios from this run; the machine is shared, so compare ratios within a run):');
  for (const [name, ratio, detail] of rows) console.log(`  ${name.padEnd(70)} ${ratio.padStart(13)}   ${detail}`);
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await run();
  process.exit(0);
}
