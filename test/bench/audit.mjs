// The audit chain's CPU per audited read (docs/audit.md, docs/performance.md): token reads on a vault
// whose audit entries are sealed into the chain, beside the same reads on a vault whose store drops
// the sealer (the trail as it was: the same batched insert, unsealed), both at synchronous=normal.
// The chain's cost per read (the difference) is held to at most 10% of a token read's CPU.
//
// Each vault runs in its own child process (this file, forked with the trail as its argument), as
// a user's process holds one vault: sharing one process let each vault's garbage and its
// collections land in the other's rounds, and the two share compiled code and its type feedback.
// The parent drives paired rounds over IPC, the order alternating, so drift hits both alike.
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const REVEAL = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];

async function openVault(dir, chained) {
  const { createVault, generateMasterKey } = await import('../../dist/index.js');
  const { createSqliteStore } = await import('../../dist/sqlite.js');
  const store = createSqliteStore({ filename: join(dir, `${chained ? 'chain' : 'plain'}.db`), synchronous: 'normal' });
  // The old trail: the store's batched append without a sealer (entries written as before).
  const used = chained ? store : Object.assign(Object.create(null), store, { appendAudit: (entries) => store.appendAudit(entries) });
  const vault = await createVault({ store: used, masterKey: generateMasterKey(), sweepIntervalMs: 0 });
  const { application } = await vault.createTenant({ name: 'bench' });
  const admin = await vault.authenticate(application.key);
  const app = await vault.applications.create(admin, { name: 'bench', type: 'private', permissions: ['token:create', 'token:read'], rules: REVEAL });
  const caller = await vault.authenticate(app.key);
  const ids = [];
  for (let i = 0; i < 100; i++) ids.push((await vault.tokens.create(caller, { type: 'card', data: CARD })).id);
  return { vault, caller, ids, admin };
}

/** CPU microseconds (user + system, every thread of the process) per read over n reads, their audit entries flushed (a logs listing flushes). */
async function cpuPerRead(open, n) {
  const { vault, caller, ids, admin } = open;
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await vault.tokens.get(caller, ids[i % ids.length]);
  await vault.logs.list(admin, { size: 1 });
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

/** The child: one vault, answering each `{ reads }` message with its CPU per read, until disconnected. */
async function serveRounds(trail, dir) {
  const open = await openVault(dir, trail === 'chained');
  process.on('message', async ({ reads }) => process.send({ cpu: await cpuPerRead(open, reads) }));
  process.on('disconnect', () => void open.vault.close().then(() => process.exit(0)));
  process.send({ ready: true });
}

/** A child process holding one trail's vault; `round(n)` resolves to its CPU per read over n reads. */
async function startTrail(trail, dir) {
  const child = fork(fileURLToPath(import.meta.url), [trail, dir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let waiting = null;
  child.on('message', (reply) => waiting?.resolve(reply));
  child.on('exit', (code) => waiting?.reject(new Error(`the ${trail} trail's process exited (${code})`)));
  const next = () => new Promise((resolve, reject) => (waiting = { resolve, reject }));
  await next();
  return {
    round: async (reads) => {
      const reply = next();
      child.send({ reads });
      return (await reply).cpu;
    },
    stop: () => new Promise((resolve) => (child.once('exit', resolve), child.disconnect())),
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const range = (xs, f) => `[${f(Math.min(...xs))}-${f(Math.max(...xs))}]`;

export async function run() {
  console.log('\n== audit: CPU per audited token read, chained vs the trail without the chain (synchronous=normal) ==');
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-bench-audit-'));
  const chained = await startTrail('chained', dir);
  const plain = await startTrail('plain', dir);
  const n = Number(process.env.BENCH_AUDIT_READS ?? 10_000);
  const rounds = Number(process.env.BENCH_AUDIT_ROUNDS ?? 21);
  await chained.round(2000);
  await plain.round(2000);
  const samples = { chained: [], plain: [], ratio: [] };
  // Paired rounds, the order alternating; each round's ratio is of its own pair, and the median and
  // range of the rounds are reported.
  for (let round = 0; round < rounds; round++) {
    const [first, second] = round % 2 === 0 ? [plain, chained] : [chained, plain];
    const a = await first.round(n);
    const b = await second.round(n);
    const [p, c] = round % 2 === 0 ? [a, b] : [b, a];
    samples.plain.push(p);
    samples.chained.push(c);
    samples.ratio.push((c - p) / c);
  }
  const us = (x) => x.toFixed(1);
  const pct = (x) => (x * 100).toFixed(1);
  const ratio = median(samples.ratio);
  console.log(`token read with the chained trail      ${us(median(samples.chained)).padStart(8)} µs CPU  ${range(samples.chained, us)}`);
  console.log(`token read with the trail unchained    ${us(median(samples.plain)).padStart(8)} µs CPU  ${range(samples.plain, us)}`);
  console.log(
    `the chain's cost per audited read      ${pct(ratio).padStart(8)} % of a token read's CPU  ${range(samples.ratio, pct)}  (median of ${rounds} paired rounds of ${n} reads; target ≤ 10%)`,
  );
  await chained.stop();
  await plain.stop();
  rmSync(dir, { recursive: true, force: true });
  return [{ name: 'audit chain CPU per read / token read CPU', ratio, target: 0.1 }];
}

const [, script, trail, dir] = process.argv;
if (import.meta.url === `file://${script}`) await (trail === undefined ? run() : serveRounds(trail, dir));
