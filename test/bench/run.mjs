// `npm run bench`: every benchmark, each beside its same-process baseline, then the table against a
// bare server (test/bench/table.mjs, which reuses the reactor figures measured here), then the table
// against the floor of the vault's own work (test/bench/floor-table.mjs). Builds first (package.json).
// The PostgreSQL HTTP benchmark runs when TOKENVAULT_BENCH_PG_URL or TOKENVAULT_TEST_PG_URL names a server.
import { existsSync } from 'node:fs';

const withPostgres = Boolean(process.env.TOKENVAULT_BENCH_PG_URL ?? process.env.TOKENVAULT_TEST_PG_URL);
const suites = [
  './core.mjs',
  './reactors.mjs',
  './fairness.mjs',
  './http.mjs',
  './proxy.mjs',
  './async.mjs',
  './audit.mjs',
  ...(withPostgres ? ['./http-postgres.mjs'] : []),
].filter((path) => existsSync(new URL(path, import.meta.url)));
const results = {};
for (const suite of suites) {
  const { run } = await import(suite);
  results[suite] = await run();
}
const { run: table } = await import('./table.mjs');
await table(results['./reactors.mjs']);
// The vault beside the floor of its own work (../shared/bench/floor.mjs and a raw QuickJS + prelude floor).
const { run: floorTable } = await import('./floor-table.mjs');
await floorTable();
process.exit(0);
