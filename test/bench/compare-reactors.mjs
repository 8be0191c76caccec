// Compares the reactor rows of the issue-21 table (test/bench/reactors.mjs) between builds, in one
// process, in alternating rounds: on this shared machine one run of each build, back to back, moves
// by several times with the load of other work. Not part of `npm run bench`.
//   node test/bench/compare-reactors.mjs <dist> [<dist> ...]
// e.g. with main's build copied before a change: node test/bench/compare-reactors.mjs /tmp/base/dist dist
// Each round measures, for every build in turn: raw QuickJS new context + eval p50 and the invoke
// p50 (each call after one idle turn, as in reactors.mjs), then invocations per second with 1 and
// with 16 in flight. It prints the medians of the per-round ratios and their range, and the CPU time
// per invoke (process.cpuUsage over the p50 calls: every thread of the process, the sandbox workers
// included). On a loaded machine the wall-time rows measure the scheduler as much as the build; the
// CPU per invoke moves far less, and where the cores are all busy it is what bounds the latency.
// COMPARE_ROUNDS (default 7), COMPARE_SAMPLES (default 200) and COMPARE_SECONDS (default 1).
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CARD, CODE, rawBaseline } from './reactors.mjs';

const dists = process.argv.slice(2);
if (dists.length === 0) {
  console.error('usage: node test/bench/compare-reactors.mjs <dist> [<dist> ...]');
  process.exit(2);
}
const ROUNDS = Number(process.env.COMPARE_ROUNDS ?? 7);
const SAMPLES = Number(process.env.COMPARE_SAMPLES ?? 200);
const SECONDS = Number(process.env.COMPARE_SECONDS ?? 1);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const raw = await rawBaseline();

/** A vault of `dist` with the trivial reactor and a card token; returns one invocation as a function. */
async function open(dist) {
  const { createTestVault } = await import(pathToFileURL(join(dist, 'testing.js')).href);
  const vault = await createTestVault();
  const admin = await vault.authenticate(vault.adminKey);
  const app = await vault.caller({ permissions: ['token:create', 'token:use'] });
  const formula = await vault.formulas.create(admin, { name: 'trivial', code: CODE, configuration: [], request_parameters: [] });
  const reactor = await vault.reactors.create(admin, { name: 'bench', formula: { id: formula.id }, configuration: {} });
  const token = await vault.tokens.create(app, { type: 'card', data: CARD });
  const invoke = () => vault.reactors.react(app, reactor.id, { args: { card: `{{ ${token.id} }}` } });
  for (let i = 0; i < 50; i++) await invoke();
  return { vault, invoke };
}

/** [p50 ms, CPU ms per call (all threads)] of SAMPLES calls, each after one idle turn. */
async function p50(fn) {
  const samples = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < SAMPLES; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    const start = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const used = process.cpuUsage(cpu);
  return [median(samples), (used.user + used.system) / 1000 / SAMPLES];
}

async function perSecond(fn, inFlight) {
  let done = 0;
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        await fn();
        done++;
      }
    }),
  );
  return done / SECONDS;
}

const builds = [];
for (const dist of dists) builds.push({ name: dist, ...(await open(resolve(dist))), invokeRatio: [], scaling: [], invokeMs: [], rawMs: [], invokeCpu: [], rawCpu: [] });
for (let round = 0; round < ROUNDS; round++) {
  for (const b of builds) {
    const [rawMs, rawCpu] = await p50(raw);
    const [invokeMs, invokeCpu] = await p50(b.invoke);
    const one = await perSecond(b.invoke, 1);
    const sixteen = await perSecond(b.invoke, 16);
    b.rawMs.push(rawMs);
    b.invokeMs.push(invokeMs);
    b.invokeRatio.push(invokeMs / rawMs);
    b.rawCpu.push(rawCpu);
    b.invokeCpu.push(invokeCpu);
    b.scaling.push(sixteen / one);
  }
}
const range = (xs) => `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;
console.log(`reactor rows: medians of ${ROUNDS} interleaved rounds (range in brackets)`);
for (const b of builds) {
  console.log(
    `  ${b.name.padEnd(28)} invoke p50 of raw ${median(b.invokeRatio).toFixed(2)}x [${range(b.invokeRatio)}]  (${median(b.invokeMs).toFixed(3)} / ${median(b.rawMs).toFixed(3)} ms)` +
      `   16 in flight of 1 ${median(b.scaling).toFixed(2)} [${range(b.scaling)}]` +
      `   CPU per invoke ${median(b.invokeCpu).toFixed(3)} ms [${range(b.invokeCpu)}] (raw ${median(b.rawCpu).toFixed(3)} ms)`,
  );
}
for (const b of builds) await b.vault.close();
process.exit(0);
