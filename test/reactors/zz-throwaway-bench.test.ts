import { it } from 'vitest';
import { newQuickJSWASMModule, RELEASE_SYNC } from 'quickjs-emscripten';
import { fixture, VISA } from './helpers.js';

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const CODE = 'module.exports = async function (req) { return { raw: { ok: typeof req.args.card } }; }';

it('bench', async () => {
  const f = await fixture();
  const id = await f.reactor(CODE);
  const tokens: string[] = [];
  for (let i = 0; i < 100; i++) tokens.push((await f.vault.tokens.create(f.user, { type: 'card', data: VISA })).id);
  const one = { args: { card: `{{ ${tokens[0]} }}` } };
  const hundred = { args: { card: `{{ ${tokens[0]} }}`, ...Object.fromEntries(tokens.map((t, i) => [`c${i}`, `{{ ${t} }}`])) } };
  const module = await newQuickJSWASMModule(RELEASE_SYNC);
  const raw = () => {
    const rt = module.newRuntime();
    const ctx = rt.newContext();
    const r = ctx.evalCode(`const module = { exports: {} }; (function(){ ${CODE} })(); module.exports({ args: { card: {} } })`);
    if (r.error) r.error.dispose(); else r.value.dispose();
    ctx.runtime.executePendingJobs();
    ctx.dispose();
    rt.dispose();
  };
  const time = async (fn: () => unknown, n: number) => {
    for (let i = 0; i < 50; i++) await fn();
    const xs: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await fn();
      xs.push(performance.now() - t);
    }
    return p50(xs);
  };
  const rawP = await time(raw, 1000);
  const oneP = await time(() => f.vault.reactors.react(f.user, id, one), 1000);
  const hundredP = await time(() => f.vault.reactors.react(f.user, id, hundred), 300);
  const { createQuickJsSandbox } = await import('../../src/sandbox/quickjs-sandbox.js');
  const sb = await createQuickJsSandbox();
  const sbP = await time(() => sb.run({ code: CODE, req: { args: { card: VISA }, configuration: {} }, host: { bt: null, fetch: null } }), 1000);
  const noTokP = await time(() => f.vault.reactors.react(f.user, id, { args: { card: 'x' } }), 1000);
  const useP = await time(() => f.vault.tokens.use(f.user, [tokens[0]!]), 1000);
  const use100P = await time(() => f.vault.tokens.use(f.user, tokens), 300);
  console.log(JSON.stringify({ sandbox_run_ms: sbP.toFixed(3), react_no_tokens_ms: noTokP.toFixed(3), use1_ms: useP.toFixed(3), use100_ms: use100P.toFixed(3) }));
  console.log(JSON.stringify({ raw_ms: rawP.toFixed(3), one_token_ms: oneP.toFixed(3), hundred_tokens_ms: hundredP.toFixed(3), one_over_raw: (oneP / rawP).toFixed(2), hundred_over_one: (hundredP / oneP).toFixed(2) }));
  await f.vault.close();
}, 120_000);
