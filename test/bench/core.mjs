// In-process benchmarks of the vault core, each beside its raw baseline measured in the same run:
//   create (card)  vs  better-sqlite3 insert + AES-256-GCM + HMAC at the same synchronous setting
//   get            vs  better-sqlite3 select by key + AES-256-GCM decrypt
//   get / metadata-filtered list at 1,000,000 tokens vs at 10,000 (BENCH_SCALE overrides 1,000,000)
import Database from 'better-sqlite3';
import { createCipheriv, createDecipheriv, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVault, generateMasterKey } from '../../dist/index.js';
import { createSqliteStore } from '../../dist/sqlite.js';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const REVEAL = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];
const dirs = [];
const tempFile = () => {
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-bench-'));
  dirs.push(dir);
  return join(dir, 'bench.db');
};

/** Runs fn n times (after a warm-up) and returns operations per second. */
async function opsPerSecond(n, fn) {
  for (let i = 0; i < Math.min(200, n / 10); i++) await fn(i);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

/** Median time per call in microseconds over `n` calls. */
async function medianMicros(n, fn) {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    await fn(i);
    samples.push(Number(process.hrtime.bigint() - start) / 1e3);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

function rawBaseline(synchronous) {
  const db = new Database(tempFile());
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.exec('CREATE TABLE t (tenant_id TEXT NOT NULL, id TEXT NOT NULL, ciphertext BLOB NOT NULL, fingerprint TEXT, PRIMARY KEY (tenant_id, id))');
  const key = randomBytes(32);
  const hmacKey = randomBytes(32);
  const insert = db.prepare('INSERT INTO t (tenant_id, id, ciphertext, fingerprint) VALUES (?, ?, ?, ?)');
  const select = db.prepare('SELECT ciphertext FROM t WHERE tenant_id = ? AND id = ?');
  const ids = [];
  return {
    create() {
      const id = randomUUID();
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(id));
      const body = Buffer.concat([cipher.update(JSON.stringify(CARD)), cipher.final()]);
      const fingerprint = createHmac('sha256', hmacKey).update(CARD.number).digest('base64url');
      insert.run('tenant', id, Buffer.concat([iv, cipher.getAuthTag(), body]), fingerprint);
      ids.push(id);
    },
    get(i) {
      const id = ids[i % ids.length];
      const { ciphertext } = select.get('tenant', id);
      const decipher = createDecipheriv('aes-256-gcm', key, ciphertext.subarray(0, 12));
      decipher.setAAD(Buffer.from(id));
      decipher.setAuthTag(ciphertext.subarray(12, 28));
      JSON.parse(Buffer.concat([decipher.update(ciphertext.subarray(28)), decipher.final()]).toString());
    },
    close: () => db.close(),
  };
}

async function openVault(synchronous, filename = tempFile()) {
  const vault = await createVault({ store: createSqliteStore({ filename, synchronous }), masterKey: generateMasterKey(), sweepIntervalMs: 0 });
  const { application } = await vault.createTenant({ name: 'bench' });
  const admin = await vault.authenticate(application.key);
  const app = await vault.applications.create(admin, { name: 'bench', type: 'private', permissions: ['token:create', 'token:read'], rules: REVEAL });
  return { vault, caller: await vault.authenticate(app.key) };
}

const results = [];
function report(name, ours, baseline, unit, target) {
  const ratio = ours / baseline;
  results.push({ name, ours, baseline, ratio, target });
  console.log(
    `${name.padEnd(44)} ${ours.toFixed(0).padStart(8)} ${unit}  baseline ${baseline.toFixed(0).padStart(8)} ${unit}  ratio ${(ratio * 100).toFixed(0).padStart(4)}%  (target ≥ ${target * 100}%)`,
  );
}

export async function run() {
  console.log('\n== core: in-process create/get vs raw better-sqlite3 + node:crypto ==');
  for (const synchronous of ['full', 'normal']) {
    const n = synchronous === 'full' ? 3000 : 10000;
    const raw = rawBaseline(synchronous);
    const { vault, caller } = await openVault(synchronous);
    // Interleave baseline and ours in rounds so machine noise hits both alike.
    let rawOps = 0;
    let ourOps = 0;
    for (let round = 0; round < 3; round++) {
      rawOps += await opsPerSecond(n / 3, () => raw.create());
      ourOps += await opsPerSecond(n / 3, () => vault.tokens.create(caller, { type: 'card', data: CARD }));
    }
    report(`create card (synchronous=${synchronous})`, ourOps / 3, rawOps / 3, 'ops/s', 0.6);
    if (synchronous === 'normal') {
      const ids = (await vault.tokens.list(caller, { size: 100 })).data.map((t) => t.id);
      let rawGet = 0;
      let ourGet = 0;
      for (let round = 0; round < 3; round++) {
        rawGet += await opsPerSecond(20000, (i) => raw.get(i));
        ourGet += await opsPerSecond(20000, (i) => vault.tokens.get(caller, ids[i % ids.length]));
      }
      report('get card, reveal (synchronous=normal)', ourGet / 3, rawGet / 3, 'ops/s', 0.5);
    }
    raw.close();
    await vault.close();
  }

  console.log('\n== core: scale (get and metadata-filtered list) ==');
  const large = Number(process.env.BENCH_SCALE ?? 1_000_000);
  const timings = {};
  for (const size of [10_000, large]) {
    const { vault, caller } = await openVault('normal');
    const started = Date.now();
    const ids = [];
    for (let i = 0; i < size; i++) {
      const token = await vault.tokens.create(caller, { type: 'token', data: `value-${i}`, metadata: { customer: `c${i}`, plan: i % 2 ? 'gold' : 'free' } });
      if (i % Math.ceil(size / 1000) === 0) ids.push({ id: token.id, customer: `c${i}` });
      if (size >= 100_000 && i % 100_000 === 0 && i > 0) process.stdout.write(`  populating ${size}: ${i} (${((Date.now() - started) / 1000).toFixed(0)} s)\r`);
    }
    if (size >= 100_000) process.stdout.write('\n');
    const get = await medianMicros(5000, (i) => vault.tokens.get(caller, ids[i % ids.length].id));
    const list = await medianMicros(2000, (i) => vault.tokens.list(caller, { metadata: { customer: ids[i % ids.length].customer } }));
    const listType = await medianMicros(500, () => vault.tokens.list(caller, { type: 'token', size: 20 }));
    timings[size] = { get, list, listType };
    console.log(`  ${String(size).padStart(9)} tokens: get p50 ${get.toFixed(1)} µs, list by metadata p50 ${list.toFixed(1)} µs, list by type p50 ${listType.toFixed(1)} µs`);
    await vault.close();
  }
  for (const key of ['get', 'list', 'listType']) {
    const growth = timings[large][key] / timings[10_000][key];
    console.log(`  ${key} at ${large} / at 10000: ${growth.toFixed(2)}x (target ≤ 1.5x)`);
    results.push({ name: `${key} growth 10k→${large}`, ratio: growth, target: 1.5 });
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
