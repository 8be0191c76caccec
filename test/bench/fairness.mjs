// One application's flood against another application's reactor calls (docs/reactors.md: shares of
// the worker pool), in process, on a built copy of the package (dist/, or BENCH_DIST=<dist>):
//   application B invokes a trivial reactor one call at a time (an idle event-loop turn between
//   calls), first alone, then while application A (same tenant) keeps BENCH_FAIR_FLOOD (default 300)
//   calls to a `for (;;) {}` reactor in flight for BENCH_FAIR_SECONDS (default 5). Every run may take
//   BENCH_FAIR_SPIN_MS (default 1000; reactors.limits.timeoutMs), so a spinning run holds its worker
//   that long. A call (A's or B's) that is refused waits 50 ms before the next one (a client backing
//   off), so the figures are not those of a retry loop on this thread. Each A caller makes at most
//   BENCH_FAIR_ROUNDS (default 1000) calls.
// Reports B's p50/p99 over the calls that were answered (and how many were refused with 503)
// alone and during the flood, and what became of A's calls. BENCH_WORKERS sets reactors.workers.size.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const dist = process.env.BENCH_DIST ? resolve(process.env.BENCH_DIST) : new URL('../../dist', import.meta.url).pathname;
const { createTestVault } = await import(pathToFileURL(resolve(dist, 'testing.js')).href);

const FLOOD = Number(process.env.BENCH_FAIR_FLOOD ?? 300);
const SECONDS = Number(process.env.BENCH_FAIR_SECONDS ?? 5);
const SPIN_MS = Number(process.env.BENCH_FAIR_SPIN_MS ?? 1000);
const ROUNDS = Number(process.env.BENCH_FAIR_ROUNDS ?? 1000);
const BASELINE_CALLS = 300;

const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]);
const outcomeOf = (error) => (error?.status === 503 ? '503' : error?.status === 500 && /time limit/.test(error.message) ? 'timed out' : `${error?.status ?? 'error'}`);

/** B's calls, one at a time, until `until()` says stop (or `max` calls): answered latencies and refusals. */
async function sample(call, until, max) {
  const ok = [];
  const failed = {};
  for (let i = 0; i < max && !until(); i++) {
    await new Promise((r) => setImmediate(r));
    const start = performance.now();
    try {
      await call();
      ok.push(performance.now() - start);
    } catch (error) {
      const kind = outcomeOf(error);
      failed[kind] = (failed[kind] ?? 0) + 1;
      if (kind === '503') await new Promise((r) => setTimeout(r, 50));
    }
  }
  ok.sort((a, b) => a - b);
  return { ok, failed };
}

function line(name, { ok, failed }) {
  const ms = (v) => (Number.isNaN(v) ? '       — ms' : `${v.toFixed(1).padStart(8)} ms`);
  console.log(`  ${name.padEnd(24)} p50 ${ms(percentile(ok, 0.5))}  p99 ${ms(percentile(ok, 0.99))}  answered ${ok.length}  refused/failed ${JSON.stringify(failed)}`);
}

export async function run() {
  const workers = process.env.BENCH_WORKERS ? { size: Number(process.env.BENCH_WORKERS) } : {};
  const vault = await createTestVault({ reactors: { limits: { timeoutMs: SPIN_MS }, workers } });
  const admin = await vault.authenticate(vault.adminKey);
  const a = await vault.caller({ permissions: ['token:use'], name: 'flooder' });
  const b = await vault.caller({ permissions: ['token:use'], name: 'bystander' });
  const reactor = async (code) => {
    const formula = await vault.formulas.create(admin, { name: 'f', code });
    return (await vault.reactors.create(admin, { name: 'r', formula: { id: formula.id }, configuration: {} })).id;
  };
  const spin = await reactor('module.exports = () => { for (;;) {} }');
  const trivial = await reactor('module.exports = () => ({ raw: 1 })');
  const callB = () => vault.reactors.react(b, trivial, {});
  for (let i = 0; i < 50; i++) await callB(); // starts the workers

  console.log(`\n== fairness: application B's trivial reactor while application A floods (${dist}) ==`);
  console.log(`  A: ${FLOOD} calls in flight to for (;;) {} for ${SECONDS} s, each run at most ${SPIN_MS} ms; workers ${workers.size ?? 'default'}`);
  const alone = await sample(callB, () => false, BASELINE_CALLS);
  line('B alone', alone);

  const end = performance.now() + SECONDS * 1000;
  const over = () => performance.now() >= end;
  const outcomes = {};
  const flood = Promise.all(
    Array.from({ length: FLOOD }, async () => {
      for (let i = 0; i < ROUNDS && !over(); i++) {
        const kind = await vault.reactors.react(a, spin, {}).then(
          () => 'answered',
          (error) => outcomeOf(error),
        );
        outcomes[kind] = (outcomes[kind] ?? 0) + 1;
        if (kind === '503') await new Promise((r) => setTimeout(r, 50));
      }
    }),
  );
  // Let A's calls reach the sandbox before B's first call.
  await new Promise((r) => setTimeout(r, 100));
  const during = await sample(callB, over, Number.POSITIVE_INFINITY);
  line("B during A's flood", during);
  await flood;
  console.log(`  A's calls: ${JSON.stringify(outcomes)}`);
  await vault.close();
  return [
    { name: 'B p50 during flood / alone', ratio: percentile(during.ok, 0.5) / percentile(alone.ok, 0.5) },
    { name: 'B p99 during flood / alone', ratio: percentile(during.ok, 0.99) / percentile(alone.ok, 0.99) },
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
