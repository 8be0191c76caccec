import { it } from 'vitest';
import Database from 'better-sqlite3';
import { createCipheriv, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVault } from '../../src/vault.js';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { createSqliteStore } from '../../src/sqlite.js';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
it('vault bench', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vb-'));
  for (const synchronous of ['normal', 'full'] as const) {
    const db = new Database(join(dir, `raw-${synchronous}.db`));
    db.pragma('journal_mode = WAL'); db.pragma(`synchronous = ${synchronous}`);
    db.exec('CREATE TABLE t (tenant_id TEXT NOT NULL, id TEXT NOT NULL, ciphertext BLOB NOT NULL, fingerprint TEXT, PRIMARY KEY (tenant_id, id))');
    const key = randomBytes(32), hk = randomBytes(32);
    const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?)');
    const raw = () => { const id = randomUUID(); const iv = randomBytes(12); const c = createCipheriv('aes-256-gcm', key, iv); c.setAAD(Buffer.from(id)); const b = Buffer.concat([c.update(JSON.stringify(CARD)), c.final()]); ins.run('tenant', id, Buffer.concat([iv, c.getAuthTag(), b]), createHmac('sha256', hk).update(CARD.number).digest('base64url')); };
    const store = createSqliteStore({ filename: join(dir, `v-${synchronous}.db`), synchronous });
    let storeNs = 0n, calls = 0;
    const orig = store.createToken.bind(store);
    (store as any).createToken = (...a: any[]) => { const t0 = process.hrtime.bigint(); const r = (orig as any)(...a); storeNs += process.hrtime.bigint() - t0; calls++; return r; };
    const vault = await createVault({ store, masterKey: generateMasterKey(), sweepIntervalMs: 0 });
    const { application } = await vault.createTenant({ name: 'bench' });
    const admin = await vault.authenticate(application.key);
    const app = await vault.applications.create(admin, { name: 'bench', type: 'private', permissions: ['token:create', 'token:read'], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }] });
    const caller = await vault.authenticate(app.key!);
    const n = synchronous === 'full' ? 1500 : 6000;
    const ops = async (k: number, fn: () => unknown) => { const t0 = process.hrtime.bigint(); for (let i = 0; i < k; i++) await fn(); return k / (Number(process.hrtime.bigint() - t0) / 1e9); };
    for (let i = 0; i < 200; i++) { raw(); await vault.tokens.create(caller, { type: 'card', data: CARD }); }
    let r = 0, v = 0;
    for (let round = 0; round < 3; round++) { r += await ops(n / 3, raw); v += await ops(n / 3, () => vault.tokens.create(caller, { type: 'card', data: CARD })); }
    console.log(`store.createToken avg ${(Number(storeNs) / calls / 1000).toFixed(1)} us over ${calls}; vault per op ${(1e6 / (v / 3)).toFixed(1)} us; raw per op ${(1e6 / (r / 3)).toFixed(1)} us`);
    console.log(`${synchronous}: raw ${Math.round(r / 3)}/s vault ${Math.round(v / 3)}/s ratio ${Math.round((v / r) * 100)}%`);
    await vault.close(); db.close();
  }
}, 120_000);
