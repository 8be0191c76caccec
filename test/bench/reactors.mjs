// Reactor invocation beside raw quickjs-emscripten in the same process:
//   invoke, trivial formula, 1 detokenized card   vs  new QuickJS context + eval of the same function
//   invoke with 100 detokenized tokens            vs  the 1-token invoke
//   invocations per second, one at a time and 16 in flight (reactor code runs in worker threads:
//   this is what a run costs end to end, message channel included)
//   RSS growth across 10,000 invocations (target < 20 MB)
// BENCH_DIST=<dist> runs it on another build (e.g. the previous commit's, to compare runtimes).
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { getQuickJS } from 'quickjs-emscripten';

const { createTestVault } = await import(
  process.env.BENCH_DIST ? pathToFileURL(resolve(process.env.BENCH_DIST, 'testing.js')).href : new URL('../../dist/testing.js', import.meta.url).href
);

export const CODE = `module.exports = async function (req) {
  const cards = req.args.cards || [req.args.card];
  return { raw: { count: cards.length, last4: cards[0].number.slice(-4) } };
};`;

export const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

/**
 * The raw baseline: the same function on the same argument in a new QuickJS context (eval, read the
 * result, dispose), as a function returning a promise. Also used by compare-reactors.mjs.
 */
export async function rawBaseline() {
  const QuickJS = await getQuickJS();
  const rawSource = `const module = { exports: {} };\n${CODE}\nmodule.exports({ args: { card: ${JSON.stringify(CARD)} }, configuration: {} });`;
  return () => {
    const vm = QuickJS.newContext();
    try {
      const handle = vm.unwrapResult(vm.evalCode(rawSource));
      const promise = vm.resolvePromise(handle);
      handle.dispose();
      vm.runtime.executePendingJobs();
      return promise.then((result) => {
        const value = vm.unwrapResult(result);
        JSON.stringify(vm.dump(value));
        value.dispose();
      });
    } finally {
      // Disposal waits for the promise above to settle (it settles in executePendingJobs).
      queueMicrotask(() => vm.dispose());
    }
  };
}

/**
 * Median latency in ms. With `idle`, each call starts after one turn of the event loop (untimed),
 * as a request arriving at a server that is not saturated does; back-to-back calls (no idle) leave
 * no turn in which the sandbox's pool of prepared contexts can refill.
 */
async function p50(n, fn, idle = false) {
  for (let i = 0; i < Math.min(50, n); i++) await fn(i);
  const samples = [];
  for (let i = 0; i < n; i++) {
    if (idle) await new Promise((resolve) => setImmediate(resolve));
    const start = process.hrtime.bigint();
    await fn(i);
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

export async function run() {
  console.log('\n== reactors: invoke vs raw QuickJS new context + eval ==');
  const card = CARD;
  const raw = await rawBaseline();

  const vault = await createTestVault();
  const admin = await vault.authenticate(vault.adminKey);
  const app = await vault.caller({ permissions: ['token:create', 'token:use'] });
  const formula = await vault.formulas.create(admin, { name: 'trivial', code: CODE, configuration: [], request_parameters: [] });
  const reactor = await vault.reactors.create(admin, { name: 'bench', formula: { id: formula.id }, configuration: {} });
  const one = await vault.tokens.create(app, { type: 'card', data: card });
  const hundred = [];
  for (let i = 0; i < 100; i++) hundred.push((await vault.tokens.create(app, { type: 'card', data: card })).id);
  const invokeOne = () => vault.reactors.react(app, reactor.id, { args: { card: `{{ ${one.id} }}` } });
  // A second application: one application holds at most half the pool's workers (fair sharing,
  // docs/reactors.md), so only callers of two applications can use both workers of a 2-core pool.
  const other = await vault.caller({ permissions: ['token:create', 'token:use'] });
  const otherToken = await vault.tokens.create(other, { type: 'card', data: card });
  const invokeOther = () => vault.reactors.react(other, reactor.id, { args: { card: `{{ ${otherToken.id} }}` } });
  const invokeHundred = () => vault.reactors.react(app, reactor.id, { args: { cards: hundred.map((id) => `{{ ${id} }}`) } });
  const check = await invokeHundred();
  if (check.raw.count !== 100) throw new Error('the 100-token invoke did not see 100 tokens');

  // Interleave rounds so noise hits both alike.
  let rawMs = 0;
  let oneMs = 0;
  let oneBackToBackMs = 0;
  let hundredMs = 0;
  for (let round = 0; round < 3; round++) {
    rawMs += await p50(300, raw, true);
    oneMs += await p50(300, invokeOne, true);
    oneBackToBackMs += await p50(300, invokeOne);
    hundredMs += await p50(100, invokeHundred, true);
  }
  rawMs /= 3;
  oneMs /= 3;
  oneBackToBackMs /= 3;
  hundredMs /= 3;
  console.log(`  raw new context + eval p50          ${rawMs.toFixed(3)} ms`);
  console.log(`  invoke, 1 card token p50            ${oneMs.toFixed(3)} ms  = ${(oneMs / rawMs).toFixed(2)}x raw (goal ≤ 1.5x)`);
  console.log(
    `  invoke, 1 card token, back-to-back  ${oneBackToBackMs.toFixed(3)} ms  = ${(oneBackToBackMs / rawMs).toFixed(2)}x raw (goal ≤ 1.5x; no idle turn: every run creates its context and compiles the prelude)`,
  );
  console.log(`  invoke, 100 tokens p50              ${hundredMs.toFixed(3)} ms  = ${(hundredMs / oneMs).toFixed(2)}x the 1-token p50 (target < 10x)`);

  // Throughput: invocations completed per second over BENCH_REACTOR_SECONDS (default 3), with
  // `inFlight` callers each invoking back-to-back.
  const seconds = Number(process.env.BENCH_REACTOR_SECONDS ?? 3);
  const throughput = async (inFlight, invokers = [invokeOne]) => {
    let done = 0;
    const end = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: inFlight }, async (_, i) => {
        const invoke = invokers[i % invokers.length];
        while (performance.now() < end) {
          await invoke();
          done++;
        }
      }),
    );
    return done / seconds;
  };
  const serial = await throughput(1);
  const parallel = await throughput(16);
  const twoApplications = await throughput(16, [invokeOne, invokeOther]);
  console.log(`  invocations/s, 1 in flight           ${serial.toFixed(0)}`);
  console.log(`  invocations/s, 16 in flight          ${parallel.toFixed(0)}  = ${(parallel / serial).toFixed(2)}x 1 in flight (one application: at most half the pool's workers)`);
  console.log(`  invocations/s, 16 in flight, 2 apps  ${twoApplications.toFixed(0)}  = ${(twoApplications / serial).toFixed(2)}x 1 in flight`);

  const gc = globalThis.gc ?? (() => {});
  gc();
  const before = process.memoryUsage().rss;
  for (let i = 0; i < 10_000; i++) await invokeOne();
  gc();
  const growth = (process.memoryUsage().rss - before) / 1024 / 1024;
  console.log(`  RSS growth over 10,000 invocations: ${growth.toFixed(1)} MB (target < 20 MB)${globalThis.gc ? '' : ' (run with --expose-gc for a tighter figure)'}`);
  await vault.close();
  return [
    { name: 'invoke 1 token / raw', ratio: oneMs / rawMs, target: 1.5, detail: `${oneMs.toFixed(3)} / ${rawMs.toFixed(3)} ms` },
    { name: 'invoke 1 token back-to-back / raw', ratio: oneBackToBackMs / rawMs, target: 1.5 },
    { name: 'invoke 100 / 1 token', ratio: hundredMs / oneMs, target: 10 },
    { name: 'RSS growth MB', ratio: growth, target: 20 },
    {
      name: 'invocations/s 16 in flight / 1',
      ratio: parallel / serial,
      target: 1,
      detail: `${parallel.toFixed(0)} / ${serial.toFixed(0)} invocations/s; over two applications ${twoApplications.toFixed(0)}`,
    },
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
