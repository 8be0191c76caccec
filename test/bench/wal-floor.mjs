// WAL page writes per created token for the floor server's own layout (../shared/bench/floor.mjs:
// a rowid table with UNIQUE (tenant_id, id), an index on (tenant_id, fingerprint), an audit row per
// token; ids time-ordered, as the floor's and the vault's are), on the data of
// test/bench/token-bytes.mjs, so the vault's figure has a baseline taken the same way: 20,000
// tokens, the first half to warm the trees, WAL frames counted over the second half with
// checkpoints held off, one BEGIN IMMEDIATE per group of tokens (group commit).
//   node test/bench/wal-floor.mjs   (compare: node test/bench/token-bytes.mjs sqlite)
// Rows: one card for every token (the POST /tokens row), distinct cards, and distinct cards with
// one search-index entry each (an HMAC-keyed B-tree, as the vault's token_search).
import Database from 'better-sqlite3';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const TOKENS = Number(process.env.BENCH_TOKENS ?? 20000);
const SCHEMA = `
CREATE TABLE tokens (seq INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, id TEXT NOT NULL, type TEXT NOT NULL,
  ciphertext BLOB NOT NULL, fingerprint TEXT, containers TEXT NOT NULL, metadata TEXT NOT NULL,
  created_by TEXT NOT NULL, created_at INTEGER NOT NULL, UNIQUE (tenant_id, id));
CREATE INDEX tokens_fingerprint ON tokens (tenant_id, fingerprint);
CREATE TABLE search (tenant_id TEXT NOT NULL, hash BLOB NOT NULL, token_seq INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, hash, token_seq)) WITHOUT ROWID;
CREATE TABLE audit_log (seq INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, actor TEXT NOT NULL, operation TEXT NOT NULL,
  resource_id TEXT, outcome TEXT NOT NULL, detail TEXT, at INTEGER NOT NULL);`;

/** An id as the floor server makes one: time-ordered (its first 48 bits the millisecond, as UUIDv7's), the rest random. */
function timeOrderedId() {
  const random = randomUUID();
  const ms = Date.now().toString(16).padStart(12, '0');
  return `${ms.slice(0, 8)}-${ms.slice(8, 12)}-7${random.slice(15)}`;
}

function walPagesPerToken({ distinct, search, group }) {
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-wal-floor-'));
  const file = join(dir, 'floor.db');
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('cache_size = -65536');
    db.exec(SCHEMA);
    const key = randomBytes(32);
    const tenant = randomUUID();
    const app = randomUUID();
    const insertToken = db.prepare(
      'INSERT INTO tokens (tenant_id, id, type, ciphertext, fingerprint, containers, metadata, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const insertSearch = db.prepare('INSERT INTO search VALUES (?, ?, ?)');
    const insertAudit = db.prepare('INSERT INTO audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at) VALUES (?, ?, ?, ?, ?, ?, ?)');
    const commit = db.transaction((from, to) => {
      for (let i = from; i < to; i++) {
        const id = timeOrderedId();
        const number = distinct ? String(4e15 + i) : '4242424242424242';
        const metadata = JSON.stringify({ customer: `customer-${i}`, plan: i % 3 === 0 ? 'gold' : 'free' });
        const fingerprint = createHmac('sha256', key).update(number).digest('base64url');
        const { lastInsertRowid } = insertToken.run(tenant, id, 'card', randomBytes(60), fingerprint, '["/pci/high/"]', metadata, app, Date.now());
        if (search)
          insertSearch.run(
            tenant,
            createHmac('sha256', key)
              .update(number.slice(-4) + i)
              .digest(),
            lastInsertRowid,
          );
        insertAudit.run(tenant, app, 'token:create', id, 'success', null, Date.now());
      }
    });
    const create = (from, to) => {
      for (let i = from; i < to; i += group) commit.immediate(i, Math.min(to, i + group));
    };
    create(0, TOKENS / 2);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.pragma('wal_autocheckpoint = 0');
    create(TOKENS / 2, TOKENS);
    const frames = statSync(`${file}-wal`).size / (db.pragma('page_size', { simple: true }) + 24);
    return +(frames / (TOKENS / 2)).toFixed(2);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const [name, shape] of [
  ['one card for every token', { distinct: false, search: false }],
  ['distinct cards', { distinct: true, search: false }],
  ['distinct cards, one search index each', { distinct: true, search: true }],
]) {
  for (const group of [10, 32]) {
    console.log(JSON.stringify({ layout: 'floor', tokens: name, tokensPerCommit: group, walPagesPerToken: walPagesPerToken({ ...shape, group }) }));
  }
}
