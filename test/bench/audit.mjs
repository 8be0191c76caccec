// The audit chain's CPU per audited read (docs/audit.md, docs/performance.md): token reads on a vault
// whose audit entries are sealed into the chain, beside the same reads on a vault whose store drops
// the sealer (the trail as it was: the same batched insert, unsealed), both at synchronous=normal.
// The chain's cost per read (the difference) is held to at most 10% of a token read's CPU.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVault, generateMasterKey } from '../../dist/index.js';
import { createSqliteStore } from '../../dist/sqlite.js';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const REVEAL = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];

async function openVault(dir, chained) {
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

/** CPU microseconds (user + system) per read over n reads, their audit entries flushed (a logs listing flushes). */
async function cpuPerRead(open, n) {
  const { vault, caller, ids, admin } = open;
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await vault.tokens.get(caller, ids[i % ids.length]);
  await vault.logs.list(admin, { size: 1 });
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

export async function run() {
  console.log('\n== audit: CPU per audited token read, chained vs the trail without the chain (synchronous=normal) ==');
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-bench-audit-'));
  const chained = await openVault(dir, true);
  const plain = await openVault(dir, false);
  const n = 20_000;
  await cpuPerRead(chained, 2000);
  await cpuPerRead(plain, 2000);
  const samples = { chained: [], plain: [] };
  // Interleaved rounds, so machine noise hits both alike; the median round of each.
  for (let round = 0; round < 5; round++) {
    samples.plain.push(await cpuPerRead(plain, n));
    samples.chained.push(await cpuPerRead(chained, n));
  }
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const withChain = median(samples.chained);
  const without = median(samples.plain);
  const added = withChain - without;
  const ratio = added / withChain;
  console.log(`token read with the chained trail      ${withChain.toFixed(1).padStart(8)} µs CPU`);
  console.log(`token read with the trail unchained    ${without.toFixed(1).padStart(8)} µs CPU`);
  console.log(`the chain's cost per audited read      ${added.toFixed(1).padStart(8)} µs CPU  = ${(ratio * 100).toFixed(1)}% of a token read's CPU  (target ≤ 10%)`);
  await chained.vault.close();
  await plain.vault.close();
  rmSync(dir, { recursive: true, force: true });
  return [{ name: 'audit chain CPU per read / token read CPU', ratio, target: 0.1 }];
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
