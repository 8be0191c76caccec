// Hostile reactors against the thread that serves requests (which a reactor must never stall:
// ARCHITECTURE.md, docs/reactors.md), on a built copy of the
// package (default dist/; pass another, e.g. the previous commit's, to compare):
//   node --expose-gc test/bench/hostile.mjs [<dist>]
// 1. /healthz under autocannon (10 connections, BENCH_HOSTILE_SECONDS, default 5) through the Node
//    adapter, in this process: first alone, then while a `for (;;) {}` reactor runs with its default
//    10 s budget. Reports p50/p99 latency and req/s of both.
// 2. 48 concurrent memory-heavy runs (each builds ~56 MB of strings under the default 64 MB limit
//    and holds it for 100 ms):
//    how many succeed, and this process's RSS at the peak and after they finish. Running
//    out of the sandbox's memory is a failure of the run ("memory limit"), not of the test.
// Not part of `npm run bench` (it takes long and, on the in-thread runtime, blocks for 10 s by design).
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';

const dist = resolve(process.argv[2] ?? 'dist');
const SECONDS = Number(process.env.BENCH_HOSTILE_SECONDS ?? 5);
const load = (name) => import(pathToFileURL(join(dist, name)).href);
const [{ createVault, generateMasterKey }, { createSqliteStore }, { createFetchHandler }, { toNodeListener }] = await Promise.all([
  load('index.js'),
  load('sqlite.js'),
  load('http.js'),
  load('node.js'),
]);
const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const gc = globalThis.gc ?? (() => undefined);

const store = createSqliteStore({ filename: join(mkdtempSync(join(tmpdir(), 'tokenvault-hostile-')), 'bench.db') });
// BENCH_WORKERS sets reactors.workers.size (builds with worker threads only).
const workers = process.env.BENCH_WORKERS ? { reactors: { workers: { size: Number(process.env.BENCH_WORKERS) } } } : {};
const vault = await createVault({ store, masterKey: generateMasterKey(), sweepIntervalMs: 0, ...workers });
const { application } = await vault.createTenant({ name: 'hostile' });
const admin = await vault.authenticate(application.key);
const app = await vault.authenticate((await vault.applications.create(admin, { name: 'user', type: 'private', permissions: ['token:use'] })).key);
async function reactor(code) {
  const formula = await vault.formulas.create(admin, { name: 'f', code });
  return (await vault.reactors.create(admin, { name: 'r', formula: { id: formula.id }, configuration: {} })).id;
}

const server = createServer(toNodeListener(createFetchHandler(vault)));
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${server.address().port}/healthz`;
const cannon = () => autocannon({ url, connections: 10, duration: SECONDS, timeout: 20 });
const line = (name, r) =>
  console.log(
    `  ${name.padEnd(28)} p50 ${String(r.latency.p50).padStart(6)} ms  p99 ${String(r.latency.p99).padStart(6)} ms  max ${String(r.latency.max).padStart(6)} ms  ${Math.round(r.requests.average)} req/s  errors ${r.errors + r.timeouts}`,
  );

console.log(`\n== hostile reactors (${dist}) ==`);
const spin = await reactor('module.exports = () => { for (;;) {} }');
const trivial = await reactor('module.exports = () => ({ raw: 1 })');
await vault.reactors.react(app, trivial, {}); // loads the sandbox
line('/healthz alone', await cannon());
const hostile = vault.reactors.react(app, spin, {}).catch((e) => e);
const during = await cannon();
const outcome = await hostile;
line('/healthz during for(;;){}', during);
console.log(`  the hostile run ended with: ${outcome instanceof Error ? outcome.message : JSON.stringify(outcome)}`);

const heavy = await reactor(`module.exports = async () => {
  const keep = [];
  for (let i = 0; i < 56; i++) keep.push('m'.repeat(1024 * 1024 - 64) + i);
  await new Promise((resolve) => setTimeout(resolve, 100)); // holds its memory while others run
  return { raw: keep.length };
}`);
gc();
const before = process.memoryUsage().rss;
let peak = before;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
const results = await Promise.all(
  Array.from({ length: 48 }, () =>
    vault.reactors.react(app, heavy, {}).then(
      () => 'ok',
      (e) => e.message,
    ),
  ),
);
clearInterval(sampler);
const counts = {};
for (const r of results) counts[r] = (counts[r] ?? 0) + 1;
console.log(`  48 concurrent ~56 MB runs: ${JSON.stringify(counts)}`);
console.log(`  RSS before ${mb(before)}, peak ${mb(peak)}, right after ${mb(process.memoryUsage().rss)}`);
await new Promise((r) => setTimeout(r, 1000));
gc();
console.log(`  RSS 1 s after, after a GC: ${mb(process.memoryUsage().rss)}`);

server.close();
await vault.close();
