// Worst-case expression requests: how long one request blocks the event loop.
//   node test/bench/expressions-worst.mjs [distDir]      (default: this checkout's dist/, after `npm run build`)
// Each scenario is one service call; it prints the call's duration, the longest event-loop stall seen
// meanwhile (monitorEventLoopDelay), and the outcome (ok, or the 400's first field and message).
// Scenarios: a create with 100 search indexes, a tokenize call of ITEMS such creates, and a list page
// of PAGE tokens whose mask has MASK_LEAVES leaves, each with the heaviest template we found of three
// kinds: nested loops (just under the old 250 ms per-render cap), a `stringify` chain (each doubles
// the backslashes; rendered without liquid, so no per-render cap applied), and the heaviest
// template the new limits allow (straight-line, memory-charged string filters over a large value).
// ITEMS, PAGE and MASK_LEAVES default to 100; on the old code set them low and scale up by hand
// (the calls are sequential renders, so their time is linear in these counts).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

const dist = pathToFileURL(resolve(process.argv[2] ?? new URL('../../dist', import.meta.url).pathname)).href;
const { createVault, generateMasterKey } = await import(`${dist}/index.js`);
const { createSqliteStore } = await import(`${dist}/sqlite.js`);

const ITEMS = Number(process.env.ITEMS ?? 100);
const PAGE = Number(process.env.PAGE ?? 100);
const MASK_LEAVES = Number(process.env.MASK_LEAVES ?? 100);
const ONLY = process.env.ONLY; // run only scenarios whose name contains this

const LOOP = '{% for a in (1..400) %}{% for b in (1..400) %}{% endfor %}{% endfor %}x';
const STRINGIFY = `{{ data.q${' | stringify'.repeat(22)} | size }}`;
// Allowed now: 5 memory-charged passes over a 300,000-character value stay under the 2,000,000 limit.
const ALLOWED = '{{ data.q | upcase | downcase | upcase | downcase | upcase | size }}';
const KINDS = [
  { name: 'loop', template: LOOP, data: { q: 'x' } },
  { name: 'stringify x22', template: STRINGIFY, data: { q: '"' } },
  { name: 'heaviest allowed (300 KB value)', template: ALLOWED, data: { q: 'a'.repeat(300_000) } },
];

const vault = await createVault({ store: createSqliteStore({ filename: ':memory:' }), masterKey: generateMasterKey(), sweepIntervalMs: 0 });
const { application } = await vault.createTenant({ name: 'bench' });
const admin = await vault.authenticate(application.key);
const reveal = (permissions) => [{ priority: 0, container: '/', transform: 'reveal', permissions }];
const pub = await vault.applications.create(admin, {
  name: 'public',
  type: 'public',
  permissions: ['token:create', 'token:update'],
  rules: reveal(['token:create', 'token:update']),
});
const attacker = await vault.authenticate(pub.key);
const writer = await vault.applications.create(admin, { name: 'writer', type: 'private', permissions: ['token:create'], rules: reveal(['token:create']) });
const writerCaller = await vault.authenticate(writer.key);
const reader = await vault.applications.create(admin, { name: 'reader', type: 'private', permissions: ['token:read'] }); // default rules: mask
const readerCaller = await vault.authenticate(reader.key);
const revealReader = await vault.applications.create(admin, { name: 'reveal reader', type: 'private', permissions: ['token:read'], rules: reveal(['token:read']) });
const revealCaller = await vault.authenticate(revealReader.key);

async function measure(name, call) {
  if (ONLY && !name.includes(ONLY)) return;
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  await new Promise((r) => setTimeout(r, 20));
  const start = performance.now();
  let outcome;
  try {
    await call();
    outcome = 'ok';
  } catch (error) {
    const errors = error?.errors ?? {};
    const [field] = Object.keys(errors);
    outcome = field ? `${error.constructor.name} ${field}: ${errors[field][0]}` : `${error?.constructor?.name}: ${error?.message}`;
  }
  const ms = performance.now() - start;
  await new Promise((r) => setTimeout(r, 20));
  histogram.disable();
  console.log(`${name.padEnd(58)} ${ms.toFixed(0).padStart(8)} ms  max stall ${(histogram.max / 1e6).toFixed(0).padStart(7)} ms  ${outcome.slice(0, 110)}`);
}

console.log(`== expressions: worst single requests (${dist}) ITEMS=${ITEMS} PAGE=${PAGE} MASK_LEAVES=${MASK_LEAVES}`);
for (const kind of KINDS) {
  const indexes = Array.from({ length: 100 }, () => kind.template);
  await measure(`create, 100 search indexes: ${kind.name}`, () => vault.tokens.create(attacker, { type: 'token', data: kind.data, search_indexes: indexes }));
  // Tokenize: the body limit (1 MiB) keeps 100 items small, so the allowed kind gets an 8 KB value.
  const itemData = kind.name.startsWith('heaviest') ? { q: 'a'.repeat(8_000) } : kind.data;
  const items = Array.from({ length: ITEMS }, () => ({ type: 'token', data: itemData, search_indexes: indexes }));
  await measure(`tokenize ${ITEMS} x 100 indexes: ${kind.name}`, () => vault.tokens.tokenize(attacker, { items }));
  // A list page: tokens saved with such a mask (where the mask is still accepted), read masked.
  const mask = Object.fromEntries(Array.from({ length: MASK_LEAVES }, (_, i) => [`k${i}`, kind.template]));
  const type = `page-${kind.name.split(' ')[0]}`;
  let saved = 0;
  for (let i = 0; i < PAGE; i++) {
    try {
      await vault.tokens.create(writerCaller, { type: 'token', data: kind.data, mask, metadata: { kind: type } });
      saved++;
    } catch {
      break;
    }
  }
  if (saved === 0) console.log(`list page of ${PAGE}, ${MASK_LEAVES}-leaf mask: ${kind.name}`.padEnd(58), '   (mask refused when saved)');
  else {
    await measure(`list page of ${saved}, ${MASK_LEAVES}-leaf mask: ${kind.name}`, () => vault.tokens.list(readerCaller, { size: PAGE, metadata: { kind: type } }));
    // The same page revealed, no expression rendered: what reading that much data costs anyway.
    await measure(`  same page revealed (no expressions)`, () => vault.tokens.list(revealCaller, { size: PAGE, metadata: { kind: type } }));
  }
}
// The hot read path these limits must not slow: a card read masked (its default 3-leaf mask), and a
// masked page of 20 cards. Best of 5 rounds, so a busy machine shows less.
if (!ONLY || 'hot path'.includes(ONLY)) {
  const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
  const ids = [];
  for (let i = 0; i < 100; i++) ids.push((await vault.tokens.create(writerCaller, { type: 'card', data: CARD, metadata: { kind: 'hot' } })).id);
  const best = async (n, fn) => {
    let top = 0;
    for (let round = 0; round < 5; round++) {
      const start = performance.now();
      for (let i = 0; i < n; i++) await fn(i);
      top = Math.max(top, n / ((performance.now() - start) / 1000));
    }
    return top;
  };
  await best(2000, (i) => vault.tokens.get(readerCaller, ids[i % 100]));
  console.log(
    `hot path: get card, masked                                 ${(await best(20_000, (i) => vault.tokens.get(readerCaller, ids[i % 100]))).toFixed(0).padStart(8)} ops/s`,
  );
  console.log(
    `hot path: list 20 cards, masked                            ${(await best(1_000, () => vault.tokens.list(readerCaller, { size: 20, metadata: { kind: 'hot' } }))).toFixed(0).padStart(8)} pages/s`,
  );
}
await vault.close();
