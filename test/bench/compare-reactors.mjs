// Compares the reactor rows of the issue-21 table (test/bench/reactors.mjs) between builds, in one
// process, in alternating rounds: on this shared machine one run of each build, back to back, moves
// by several times with the load of other work. Not part of `npm run bench`.
//   node test/bench/compare-reactors.mjs <dist> [<dist> ...]
// e.g. with main's build copied before a change: node test/bench/compare-reactors.mjs /tmp/base/dist dist
// Each round measures, for every build in turn: raw QuickJS new context + eval p50 and the invoke
// p50 (each call after one idle turn, as in reactors.mjs), then invocations per second with 1 and
// with 16 in flight. It prints the medians of the per-round ratios and their range.
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

async function p50(fn) {
  const samples = [];
  for (let i = 0; i < SAMPLES; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    const start = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(samples);
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
for (const dist of dists) builds.push({ name: dist, ...(await open(resolve(dist))), invokeRatio: [], scaling: [], invokeMs: [], rawMs: [] });
for (let round = 0; round < ROUNDS; round++) {
  for (const b of builds) {
    const rawMs = await p50(raw);
    const invokeMs = await p50(b.invoke);
    const one = await perSecond(b.invoke, 1);
    const sixteen = await perSecond(b.invoke, 16);
    b.rawMs.push(rawMs);
    b.invokeMs.push(invokeMs);
    b.invokeRatio.push(invokeMs / rawMs);
    b.scaling.push(sixteen / one);
  }
}
const range = (xs) => `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;
console.log(`reactor rows: medians of ${ROUNDS} interleaved rounds (range in brackets)`);
for (const b of builds) {
  console.log(
    `  ${b.name.padEnd(28)} invoke p50 of raw ${median(b.invokeRatio).toFixed(2)}x [${range(b.invokeRatio)}]  (${median(b.invokeMs).toFixed(3)} / ${median(b.rawMs).toFixed(3)} ms)` +
      `   16 in flight of 1 ${median(b.scaling).toFixed(2)} [${range(b.scaling)}]`,
  );
}
for (const b of builds) await b.vault.close();
process.exit(0);
