import { loadQuickJsModule } from '../../src/sandbox/engine/quickjs-module.js';
const mod: any = await loadQuickJsModule();
const N = 3000;
const B = `const B = { define, stringify, parse, TypeError: TypeErrorCtor, String, Number, Error, InternalError: G.InternalError, WeakMap, Map, keys: Object.keys, isArray: Array.isArray, hasOwn: Object.prototype.hasOwnProperty };`;
const head = `'use strict'; const G = globalThis; const define = Object.defineProperty; const stringify = JSON.stringify; const parse = JSON.parse; const TypeErrorCtor = TypeError;`;
const loop = `for (const name of 'a b c d e f g h i j k l'.split(' ')) { define(G, name, { get() { return load(name, B); }, set(value) { define(G, name, { value, writable: true, configurable: true }); }, configurable: true }); }`;
const rej = `function rejectNonJson(key, value) { const t = typeof value; if (t === 'function' || t === 'symbol' || t === 'bigint') { throw new TypeErrorCtor('a ' + t + (key === '' ? '' : ' at key "' + key + '"') + ' is not a JSON value'); } return value; }`;
const variants: Record<string, string> = {
  empty: `(function (load) { 'use strict'; return 1; })`,
  head: `(function (load) { ${head} return 1; })`,
  headB: `(function (load) { ${head} ${B} return 1; })`,
  headLoop: `(function (load) { ${head} const B = {}; ${loop} return 1; })`,
  headRej: `(function (load) { ${head} ${rej} return 1; })`,
  emptyAsync: `(function (load) { 'use strict'; return async function run(a) { return 1; }; })`,
  emptyArrow: `(function (load) { 'use strict'; return (a) => 1; })`,
  twoFns: `(function (load) { 'use strict'; function a() { return 1; } function b() { return 2; } return [a, b]; })`,
  fourFns: `(function (load) { 'use strict'; function a() { return 1; } function b() { return 2; } function c() { return 1; } function d() { return 2; } return [a, b, c, d]; })`,
};
for (const [name, src] of Object.entries(variants)) {
  let tot = 0;
  for (let r = 0; r < 2; r++) { tot = 0;
  for (let i = 0; i < N; i++) {
    const rt = mod.newRuntime(); const ctx = rt.newContext();
    const s = performance.now();
    const h = ctx.evalCode(src, 'x', { type: 'global', strict: true });
    tot += performance.now() - s;
    if (h.error) { console.log(name, ctx.dump(h.error)); h.error.dispose(); } else h.value.dispose();
    ctx.dispose(); rt.dispose();
  } }
  console.log(name.padEnd(10), (tot / N * 1000).toFixed(1), 'us', src.length);
}
