// PostgreSQL statements per asynchronous reactor run (docs/performance.md): from the
// accepting request (POST /reactors/{id}/react-async) to the stored result, the job worker's
// statements included. Each build runs as `tokenvault serve --postgres` (access log off) with
// pg-count-preload.mjs loaded; N runs are accepted (10 at a time) and the counts are read once the
// last has finished, so every run's statements are in, whatever the worker's lag.
//   node test/bench/pg-async-statements.mjs [dist …]     (default: this checkout's dist)
// BENCH_ASYNC_RUNS (default 300) runs per build. Needs PostgreSQL (TOKENVAULT_BENCH_PG_URL or
// TOKENVAULT_TEST_PG_URL). Not part of `npm run bench`.
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startCountedServe, takeCounts } from './pg-counted-serve.mjs';

const PG_URL = process.env.TOKENVAULT_BENCH_PG_URL ?? process.env.TOKENVAULT_TEST_PG_URL;
const RUNS = Number(process.env.BENCH_ASYNC_RUNS ?? 300);
const IN_FLIGHT = 10;

async function measure(dist, dir, n) {
  const server = await startCountedServe(dist, PG_URL, dir, n);
  try {
    const call = async (path, body) => {
      const response = await fetch(server.url + path, { method: 'POST', headers: { 'SVC-API-KEY': server.key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      return response.json();
    };
    // Settled: the set-up's statements and the auth cache's first lookups are not counted.
    await sleep(1000);
    await takeCounts(server);
    let accepted = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (accepted < RUNS) {
          accepted++;
          await call(`/reactors/${server.reactorId}/react-async`, { args: { card: `{{ ${server.tokenId} }}` } });
        }
      }),
    );
    // Watched on a connection of this process, so the wait adds nothing to the server's counts.
    while ((await watcher.query(`SELECT count(*)::int AS n FROM "${server.schema}".reactor_requests WHERE status IN ('completed', 'failed')`)).rows[0].n < RUNS) await sleep(20);
    const seconds = (performance.now() - started) / 1000;
    return { byKind: await takeCounts(server), seconds };
  } finally {
    server.child.kill('SIGTERM');
    await once(server.child, 'exit');
    await watcher.query(`DROP SCHEMA IF EXISTS "${server.schema}" CASCADE`);
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
