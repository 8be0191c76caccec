// The vault beside the floor of its own work (docs/performance.md, "Against the floor"), each row
// measured beside its baseline in the same run, in interleaved rounds, medians with their ranges:
//   1. GET /tokens/{id}, card, masked, defaults (access log on): server CPU per request of
//      `tokenvault serve`, of the floor's (../shared/bench/floor.mjs, started as its README says)
//   2. POST /tokens, card, defaults (synchronous=full): the same, and req/s of the floor's
//   3. reactor invoke p50, 1 in flight, one detokenized card, trivial code, of a raw QuickJS
//      context + tokenvault's own prelude + eval + dispose in this process (prelude-floor.mjs)
//   4. 8 concurrent invokes of one application whose code awaits a 2 s upstream fetch (limit
//      10 s): how many succeed; and, as information, 40 of them
// As information beside them (not rows): the bare node:http server's CPU per request (table.mjs's
// baseline), and the reactor invoke of raw QuickJS without the prelude.
// Server CPU per request: user + system time from /proc/<pid>/stat over a round, divided by the
// requests answered (Linux). FLOOR_ROUNDS (default 5), FLOOR_SECONDS per server and round (default
// 3), FLOOR_ONLY=http|reactors|concurrency; BENCH_DIST=<dist> measures another build; FLOOR_SERVER
// names the floor (default ../shared/bench/floor.mjs beside the checkout's parent). The reactor row
// has its own FLOOR_REACTOR_ROUNDS (default 15), FLOOR_REACTOR_SAMPLES (calls of each side per
// round, default 500) and FLOOR_REACTOR_BLOCK (calls in a row before the sides alternate, default
// 25): its rounds are short, so more of them and longer ones cost little, and the former 5 rounds
// of 200 moved by more than a change would (docs/performance.md, "The reactor row").
//   npm run build && node test/bench/floor-table.mjs
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { startServe } from './http.mjs';
import { cpuSeconds, startBare } from './table.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIST = process.env.BENCH_DIST ? resolve(process.env.BENCH_DIST) : join(ROOT, 'dist');
const ROUNDS = Number(process.env.FLOOR_ROUNDS ?? 5);
const SECONDS = Number(process.env.FLOOR_SECONDS ?? 3);
const REACTOR_ROUNDS = Number(process.env.FLOOR_REACTOR_ROUNDS ?? 15);
const REACTOR_SAMPLES = Number(process.env.FLOOR_REACTOR_SAMPLES ?? 500);
const BLOCK = Number(process.env.FLOOR_REACTOR_BLOCK ?? 25);
const CONNECTIONS = 32;
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const CREATE_BODY = JSON.stringify({ type: 'card', data: CARD, deduplicate_token: false });

/** The floor server's file: FLOOR_SERVER, else the shared bench beside the worktrees. */
export function floorFile() {
  if (process.env.FLOOR_SERVER) return resolve(process.env.FLOOR_SERVER);
  for (const dir of [join(ROOT, '..', 'shared', 'bench'), join(ROOT, '..', '..', 'shared', 'bench')]) {
    if (existsSync(join(dir, 'floor.mjs'))) return join(dir, 'floor.mjs');
  }
  return null;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const range = (xs, digits = 2) => `${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)}`;

/** `node floor.mjs <checkout> <db file>`: prints {port, path, key} when listening. */
export async function startFloor(file, db) {
  const child = spawn(process.execPath, [file, ROOT, db], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  for await (const chunk of child.stdout) {
    out += chunk;
    if (out.includes('\n')) break;
  }
  child.stdout.resume();
  const { port, path, key } = JSON.parse(out.split('\n')[0]);
  return { child, url: `http://127.0.0.1:${port}`, path, key };
}

async function round(target, method, seconds) {
  const options = {
    url: target.url + (method === 'GET' ? target.path : '/tokens'),
    connections: CONNECTIONS,
    duration: seconds,
    method,
    headers: { 'SVC-API-KEY': target.key, 'content-type': 'application/json' },
  };
  if (method === 'POST') options.body = CREATE_BODY;
  const before = cpuSeconds([target.child.pid]);
  const result = await autocannon(options);
  const cpu = cpuSeconds([target.child.pid]) - before;
  const bad = result.non2xx + result.errors + result.timeouts;
  return { cpuUs: (cpu * 1e6) / Math.max(result.requests.total, 1), rps: result.requests.total / result.duration, bad };
}

/** Interleaved rounds over `targets` (after one uncounted warm-up round each). */
async function interleave(targets, method) {
  for (const t of targets) await round(t, method, 1);
  const runs = targets.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < targets.length; i++) runs[i].push(await round(targets[i], method, SECONDS));
  }
  return runs;
}

async function stop(targets) {
  for (const { child } of targets) {
    if (child.exitCode !== null) continue;
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

/** Rows 1-2 (and the bare server as information). */
async function httpRows(rows) {
  const file = floorFile();
  if (file === null) {
    rows.push(['GET / POST of the floor', 'skipped', 'floor.mjs not found: set FLOOR_SERVER']);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-floor-'));
  const started = [];
  try {
    const floor = await startFloor(file, join(dir, 'floor.db'));
    started.push(floor);
    const vault = await startServe(join(DIST, 'cli.js'), ['--db', join(dir, 'vault.db')]);
    started.push(vault);
    const bare = await startBare();
    started.push(bare);
    for (const method of ['GET', 'POST']) {
      const [f, v, b] = await interleave([floor, vault, bare], method);
      const cpuRatio = v.map((x, i) => x.cpuUs / f[i].cpuUs);
      const rpsRatio = v.map((x, i) => x.rps / f[i].rps);
      const bad = [...f, ...v].some((x) => x.bad > 0) ? `; non-2xx/errors ${[...f, ...v].reduce((s, x) => s + x.bad, 0)}` : '';
      const name =
        method === 'GET'
          ? 'GET /tokens/{id}, card, masked, defaults (access log on): server CPU/request of the floor'
          : 'POST /tokens, card, defaults (synchronous=full): server CPU/request of the floor';
      rows.push([
        name,
        `${median(cpuRatio).toFixed(2)}x [${range(cpuRatio)}]`,
        `vault ${median(v.map((x) => x.cpuUs)).toFixed(1)} µs [${range(
          v.map((x) => x.cpuUs),
          0,
        )}], floor ${median(f.map((x) => x.cpuUs)).toFixed(1)} µs [${range(
          f.map((x) => x.cpuUs),
          0,
        )}]; req/s of the floor's ${median(rpsRatio).toFixed(2)} [${range(rpsRatio)}] (${median(v.map((x) => x.rps)).toFixed(0)} / ${median(f.map((x) => x.rps)).toFixed(0)})${bad}`,
      ]);
      rows.push([
        `  (information) ${method} bare node:http server CPU/request`,
        `${median(b.map((x) => x.cpuUs)).toFixed(1)} µs`,
        `by round ${b.map((x) => x.cpuUs.toFixed(0)).join(', ')}`,
      ]);
    }
  } finally {
    await stop(started);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A vault of the build under test with the trivial reactor and a card token. */
async function reactorVault(options = {}) {
  const { createTestVault } = await import(pathToFileURL(join(DIST, 'testing.js')).href);
  const vault = await createTestVault(options);
  const admin = await vault.authenticate(vault.adminKey);
  const app = await vault.caller({ permissions: ['token:create', 'token:use'] });
  const reactor = async (code) => {
    const formula = await vault.formulas.create(admin, { name: 'bench', code, configuration: [], request_parameters: [] });
    return (await vault.reactors.create(admin, { name: 'bench', formula: { id: formula.id }, configuration: {} })).id;
  };
  return { vault, app, reactor };
}

/** p50 ms of `n` calls, each after one idle turn (a request arriving at a server that is not saturated). */
async function p50(fn, n) {
  const samples = [];
  for (let i = 0; i < n; i++) {
    await new Promise((r) => setImmediate(r));
    const start = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(samples);
}

/**
 * p50 ms of `a` and of `b` over `n` calls of each, in alternating blocks of BLOCK calls, each call
 * after one idle turn: a change in the machine's load during the round falls on both sides alike
 * instead of on whichever ran in that stretch. Blocks, not single calls: alternating call by call
 * gives the sandbox worker the floor's whole call as idle time to prepare its next context, and
 * likely leaves the invoke's garbage to be collected during the floor's calls; both flatter the
 * ratio (docs/performance.md, "The reactor row").
 */
async function p50Pair(a, b, n) {
  const samples = [[], []];
  const fns = [a, b];
  for (let i = 0; i < 2 * n; i++) {
    const which = Math.floor(i / BLOCK) % 2;
    await new Promise((r) => setImmediate(r));
    const start = process.hrtime.bigint();
    await fns[which]();
    samples[which].push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return [median(samples[0]), median(samples[1])];
}

/** Row 3 (and raw QuickJS without the prelude as information). */
async function reactorRow(rows) {
  const { CODE, rawBaseline } = await import('./reactors.mjs');
  const { preludeFloor } = await import('./prelude-floor.mjs');
  const raw = await rawBaseline();
  const floor = await preludeFloor(CODE, { args: { card: CARD }, configuration: {} });
  const { vault, app, reactor } = await reactorVault();
  try {
    const id = await reactor(CODE);
    const token = await vault.tokens.create(app, { type: 'card', data: CARD });
    const invoke = () => vault.reactors.react(app, id, { args: { card: `{{ ${token.id} }}` } });
    for (let i = 0; i < 100; i++) {
      await invoke();
      await floor();
      await raw();
    }
    const ratio = [];
    const ms = { invoke: [], floor: [], raw: [] };
    for (let r = 0; r < REACTOR_ROUNDS; r++) {
      const [f, v] = await p50Pair(floor, invoke, REACTOR_SAMPLES);
      const w = await p50(raw, REACTOR_SAMPLES);
      ms.floor.push(f);
      ms.invoke.push(v);
      ms.raw.push(w);
      ratio.push(v / f);
    }
    rows.push([
      `reactor invoke p50, 1 in flight, 1 card: of raw QuickJS + prelude + eval + dispose (${REACTOR_ROUNDS} rounds of ${REACTOR_SAMPLES})`,
      `${median(ratio).toFixed(2)}x [${range(ratio)}]`,
      `${median(ms.invoke).toFixed(3)} / ${median(ms.floor).toFixed(3)} ms`,
    ]);
    const rawRatio = ms.invoke.map((v, i) => v / ms.raw[i]);
    rows.push(['  (information) the same of raw QuickJS without the prelude', `${median(rawRatio).toFixed(2)}x [${range(rawRatio)}]`, `raw ${median(ms.raw).toFixed(3)} ms`]);
  } finally {
    await vault.close();
  }
}

/** Row 4: `n` concurrent invokes of one application awaiting a 2 s upstream (default limits). */
async function concurrencyRow(rows, n, label) {
  const upstream = createServer((_req, res) => {
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 2000);
  });
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${upstream.address().port}/slow`;
  const { vault, app, reactor } = await reactorVault({ reactors: { egress: { allowHosts: ['127.0.0.1'], allowPrivateNetwork: true } } });
  try {
    const id = await reactor('module.exports = async (req) => { const r = await fetch(req.args.url); return { raw: await r.json() }; }');
    await vault.reactors.react(app, id, { args: { url } });
    const start = performance.now();
    const outcomes = await Promise.allSettled(Array.from({ length: n }, () => vault.reactors.react(app, id, { args: { url } })));
    const seconds = (performance.now() - start) / 1000;
    const failures = new Map();
    for (const o of outcomes) if (o.status === 'rejected') failures.set(o.reason.message, (failures.get(o.reason.message) ?? 0) + 1);
    const ok = outcomes.filter((o) => o.status === 'fulfilled').length;
    rows.push([label, `${ok} of ${n} succeed`, `${seconds.toFixed(1)} s in all${[...failures].map(([m, c]) => `; ${c} failed "${m}"`).join('')}`]);
  } finally {
    await vault.close();
    upstream.closeAllConnections();
    upstream.close();
  }
}

export async function run() {
  console.log(`\n== against the floor: ${DIST}; ${ROUNDS} interleaved rounds, ${SECONDS} s per server and round, autocannon ${CONNECTIONS} connections ==`);
  const only = process.env.FLOOR_ONLY;
  const rows = [];
  if (!only || only === 'http') await httpRows(rows);
  if (!only || only === 'reactors') await reactorRow(rows);
  if (!only || only === 'concurrency') {
    await concurrencyRow(rows, 8, '8 concurrent invokes awaiting a 2 s upstream fetch (limit 10 s)');
    await concurrencyRow(rows, 40, '  (information) 40 of them');
  }
  console.log('\nagainst the floor (medians of the per-round ratios [range]; a shared machine: compare within one run):');
  for (const [name, ratio, detail] of rows) console.log(`  ${name.padEnd(90)} ${ratio.padStart(22)}   ${detail}`);
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await run();
  process.exit(0);
}
