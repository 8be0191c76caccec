// PostgreSQL statements per asynchronous reactor run (issue 21, docs/performance.md): from the
// accepting request (POST /reactors/{id}/react-async) to the stored result, the job worker's
// statements included. Each build runs as `tokenvault serve --postgres` (access log off) with
// pg-count-preload.mjs loaded; N runs are accepted (10 at a time) and the counts are read once the
// last has finished, so every run's statements are in, whatever the worker's lag.
//   node test/bench/pg-async-statements.mjs [dist …]     (default: this checkout's dist)
// BENCH_ASYNC_RUNS (default 300) runs per build. Needs PostgreSQL (TOKENVAULT_BENCH_PG_URL or
// TOKENVAULT_TEST_PG_URL). Not part of `npm run bench`.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const PG_URL = process.env.TOKENVAULT_BENCH_PG_URL ?? process.env.TOKENVAULT_TEST_PG_URL;
const RUNS = Number(process.env.BENCH_ASYNC_RUNS ?? 300);
const IN_FLIGHT = 10;
const PRELOAD = fileURLToPath(new URL('./pg-count-preload.mjs', import.meta.url));
const CODE = 'module.exports = async function (req) { return { raw: { last4: String(req.args.card.number).slice(-4) } }; };';

/** The statements the process sent since the last reading, by kind (pg-count-preload.mjs writes them on SIGUSR2). */
async function counts(child, file) {
  child.kill('SIGUSR2');
  for (let i = 0; i < 100; i++) {
    await sleep(20);
    try {
      const text = readFileSync(file, 'utf8');
      rmSync(file);
      return JSON.parse(text);
    } catch {
      // not written yet
    }
  }
  throw new Error('the counts were not written');
}

async function measure(dist, dir, n) {
  const adminKey = `bench-admin-${randomBytes(16).toString('hex')}`;
  const file = join(dir, `counts-${n}.json`);
  const schema = `tv_async_${process.pid}_${n}_${randomBytes(3).toString('hex')}`;
  const child = spawn(process.execPath, ['--import', PRELOAD, join(dist, 'cli.js'), 'serve', '--port', '0', '--postgres', PG_URL, '--postgres-schema', schema, '--access-log', 'off'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, TOKENVAULT_ADMIN_KEY: adminKey, TOKENVAULT_MASTER_KEY: randomBytes(32).toString('base64'), PG_COUNT_FILE: file },
  });
  try {
    let out = '';
    let url;
    for await (const chunk of child.stdout) {
      out += chunk;
      url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url) break;
    }
    if (!url) throw new Error(`tokenvault serve did not start:\n${out}`);
    child.stdout.resume();
    const call = async (key, path, body, method = 'POST') => {
      const response = await fetch(url + path, { method, headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
      return response.json();
    };
    const app = await call(adminKey, '/applications', { name: 'bench', type: 'private', permissions: ['token:create', 'token:read', 'token:use'] });
    const token = await call(app.key, '/tokens', { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 } });
    const formula = await call(adminKey, '/reactor-formulas', { name: 'bench', code: CODE, configuration: [], request_parameters: [{ name: 'card', type: 'object' }] });
    const reactor = await call(adminKey, '/reactors', { name: 'bench', formula: { id: formula.id }, configuration: {} });
    // Settled: the set-up's statements and the auth cache's first lookups are not counted.
    await sleep(1000);
    await counts(child, file);
    let accepted = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (accepted < RUNS) {
          accepted++;
          await call(app.key, `/reactors/${reactor.id}/react-async`, { args: { card: `{{ ${token.id} }}` } });
        }
      }),
    );
    // Watched on a connection of this process, so the wait adds nothing to the server's counts.
    while ((await watcher.query(`SELECT count(*)::int AS n FROM "${schema}".reactor_requests WHERE status IN ('completed', 'failed')`)).rows[0].n < RUNS) await sleep(20);
    const seconds = (performance.now() - started) / 1000;
    return { byKind: await counts(child, file), seconds };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    await watcher.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
}

if (!PG_URL) {
  console.error('set TOKENVAULT_BENCH_PG_URL or TOKENVAULT_TEST_PG_URL');
  process.exit(2);
}
const watcher = new pg.Pool({ connectionString: PG_URL, max: 1 });
const dists = process.argv.slice(2);
const dir = mkdtempSync(join(tmpdir(), 'tokenvault-pg-async-'));
try {
  for (const [n, dist] of (dists.length > 0 ? dists : ['dist']).entries()) {
    const { byKind, seconds } = await measure(resolve(dist), dir, n);
    const total = Object.values(byKind).reduce((a, b) => a + b, 0);
    console.log(`\n${dist}: ${RUNS} asynchronous runs in ${seconds.toFixed(2)} s; ${(total / RUNS).toFixed(2)} statements per run`);
    for (const [kind, count] of Object.entries(byKind).sort((a, b) => b[1] - a[1])) console.log(`  ${(count / RUNS).toFixed(3).padStart(7)}  ${kind}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  await watcher.end();
}
