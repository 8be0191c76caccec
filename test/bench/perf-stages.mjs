// Where a request's CPU goes, stage by stage, in `tokenvault serve` and in the floor server
// (../shared/bench/floor.mjs), from on-CPU samples of Linux perf (docs/performance.md, "Against the
// floor"): both serve GET or POST /tokens under autocannon (32 connections) while `perf record`
// samples every thread of the server; each sample of the main thread counts for the first stage
// its stack names, leaf first. A --cpu-prof profile samples wall time, which counts a thread
// blocked in fsync as busy; perf counts only time on a CPU, as the floor table's /proc figures do.
// Needs `perf` (Debian's linux-perf) and the right to attach to a process (root, or
// kernel.perf_event_paranoid <= 1).
//   npm run build && node test/bench/perf-stages.mjs [POST|GET] [seconds]
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { floorFile, startFloor } from './floor-table.mjs';
import { startServe } from './http.mjs';

const [method = 'POST', seconds = '4'] = process.argv.slice(2);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HZ = 999;
// Resolved before the process moves into its scratch directory (below).
const FLOOR = floorFile();
if (FLOOR === null) throw new Error('The floor server (../shared/bench/floor.mjs) was not found: set FLOOR_SERVER to its path');
const BODY = JSON.stringify({ type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 }, deduplicate_token: false });

// A sample's stage: the first of these its stack matches, leaf first (a GC sample is GC wherever it ran).
const STAGES = [
  ['garbage collection', /Scavenge|MarkCompact|Heap::|GCTracer|ConcurrentMarking|Sweeper/],
  ['access log (pino)', /pino|sonic|asJson|access-log|accessLog/],
  ['audit record and flush', /AuditLog|appendAudit|insertAudit|insertSealed|linkHex|#sealer/],
  ['webhook events', /WebhookEvents|#emit /],
  ['token read (decryption, transform, view)', /decryptWith|renderPlan|TokenViewer|[*~^]get .*dist\//],
  ['token preparation (validation, id, sealing, fingerprint)', /[*~^]prepare |parseCreateTokenInput|TokenPreparer|derived |valibot/],
  ['store: insert and commit', /#endTurn|GroupCommit|sqliteTransaction|#insert |getToken|better_sqlite3|sqlite3/],
  ['response write', /#write |_http_outgoing|[wW]ritev|serialize /],
  ['authentication', /authenticate|hashApiKey/],
  ['exchange and router', /exchange |readJsonBody|acceptable|handle /],
  ['HTTP parsing and the adapter', /llhttp|parserOn|_http_server|_http_incoming|_http_common|serve /],
  ["the floor's own handler", /floor\.mjs/],
  ['promise and microtask machinery', /RunMicrotasks|PromiseFulfill|AsyncFunctionAwait/],
];

/** µs of CPU per answered request by stage, over one sampled run of the load. */
async function stages(server, dir) {
  const options = {
    url: server.url + (method === 'GET' ? server.path : '/tokens'),
    connections: 32,
    method,
    headers: { 'SVC-API-KEY': server.key, 'content-type': 'application/json' },
  };
  if (method === 'POST') options.body = BODY;
  await autocannon({ ...options, duration: 1 });
  const data = join(dir, `${server.child.pid}.data`);
  const perf = spawn('perf', ['record', '-F', String(HZ), '-g', '-p', String(server.child.pid), '-o', data, '--', 'sleep', seconds], { stdio: 'ignore' });
  const result = await autocannon({ ...options, duration: Number(seconds) });
  const [code] = await once(perf, 'exit');
  if (code !== 0) throw new Error(`perf record failed (${code}): is perf installed, and may this user attach to a process?`);
  const script = spawnSync('perf', ['script', '-i', data, '-F', 'comm,pid,tid,ip,sym'], { encoding: 'utf8', maxBuffer: 1 << 30 });
  const tally = new Map();
  for (const sample of script.stdout.split('\n\n')) {
    const [head = '', ...frames] = sample.trim().split('\n');
    const ids = /(\d+)\/(\d+)/.exec(head);
    if (ids === null) continue;
    let stage = ids[1] === ids[2] ? 'other (main thread)' : 'other threads (GC helpers, thread pool)';
    if (ids[1] === ids[2]) {
      outer: for (const frame of frames) {
        for (const [name, pattern] of STAGES) {
          if (pattern.test(frame)) {
            stage = name;
            break outer;
          }
        }
      }
    }
    tally.set(stage, (tally.get(stage) ?? 0) + 1);
  }
  const perRequest = (samples) => (samples * 1e6) / HZ / result.requests.total;
  return new Map([...tally].map(([stage, n]) => [stage, perRequest(n)]));
}

const dir = mkdtempSync(join(tmpdir(), 'tokenvault-perf-stages-'));
// Names for JIT-compiled frames: both servers write their perf map (/tmp/perf-<pid>.map), and V8
// writes an isolate log into the working directory, so the servers start in the scratch directory.
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --perf-basic-prof --interpreted-frames-native-stack`;
process.chdir(dir);
const servers = [];
try {
  servers.push(['floor', await startFloor(FLOOR, join(dir, 'floor.db'))]);
  servers.push(['tokenvault', await startServe(join(ROOT, 'dist', 'cli.js'), ['--db', join(dir, 'vault.db')])]);
  const results = [];
  for (const [name, server] of servers) results.push([name, await stages(server, dir)]);
  const names = [...new Set(results.flatMap(([, m]) => [...m.keys()]))].sort((a, b) => (results[1][1].get(b) ?? 0) - (results[1][1].get(a) ?? 0));
  console.log(`\n== ${method} /tokens: on-CPU µs per request by stage (perf, ${seconds} s each) ==`);
  console.log(`${'stage'.padEnd(58)}${results.map(([n]) => n.padStart(12)).join('')}`);
  for (const stage of names) console.log(`${stage.padEnd(58)}${results.map(([, m]) => (m.get(stage) ?? 0).toFixed(1).padStart(12)).join('')}`);
  const totals = results.map(([, m]) => [...m.values()].reduce((a, b) => a + b, 0));
  console.log(`${'all'.padEnd(58)}${totals.map((t) => t.toFixed(1).padStart(12)).join('')}`);
} finally {
  for (const [, { child }] of servers) {
    if (child.exitCode !== null) continue;
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
  rmSync(dir, { recursive: true, force: true });
}
