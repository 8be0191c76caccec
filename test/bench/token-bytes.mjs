// Bytes and WAL page writes per token: 20,000 card tokens (number and expiry, no cvc), each with two
// metadata pairs and one search index, created through the vault on SQLite and on PostgreSQL.
//   node test/bench/token-bytes.mjs [sqlite|postgres|both]   (after npm run build)
// SQLite: bytes from dbstat (every page of the token tables and their indexes, audit_log apart), WAL
// page writes from the frames the WAL gains while the tokens are created (checkpoints held off).
// A second SQLite run creates the POST /tokens row's token instead (the same card, its type's
// defaults, no metadata or search index), whose fingerprint index entries are adjacent.
// PostgreSQL: pg_total_relation_size of the token tables (heap, TOAST and indexes), audit_log apart.
// BENCH_TOKENS overrides 20,000; BENCH_PG_URL the database (default the local test database).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVault, generateMasterKey } from '../../dist/index.js';
import { createSqliteStore } from '../../dist/sqlite.js';
import { createPostgresStore } from '../../dist/postgres.js';

const TOKENS = Number(process.env.BENCH_TOKENS ?? 20000);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const CONCURRENCY = 32;
const TOKEN_TABLES =
  /^(tokens|token_metadata|token_search|deleted_tokens|token_ids|sqlite_autoindex_tokens|sqlite_autoindex_token_|sqlite_autoindex_deleted_tokens|tokens_|token_metadata_|token_search_)/;
const RULES = [{ priority: 0, container: '/', transform: 'mask', permissions: ['token:create', 'token:read'] }];

/** A Luhn-valid 16-digit card number from i. */
function cardNumber(i) {
  const body = `4${String(i).padStart(14, '0')}`;
  let sum = 0;
  for (let k = 0; k < 15; k++) {
    let d = Number(body[14 - k]);
    if (k % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return body + String((10 - (sum % 10)) % 10);
}

async function fill(vault, plain = false) {
  const { application } = await vault.createTenant({ name: 'bench' });
  const admin = await vault.authenticate(application.key);
  const app = await vault.applications.create(admin, { name: 'bench', type: 'private', permissions: ['token:create', 'token:read'], rules: RULES });
  const caller = await vault.authenticate(app.key);
  // plain: the POST /tokens row of the performance table (one card, its type's defaults, nothing else).
  const plainCard = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
  const create = (i) =>
    plain
      ? vault.tokens.create(caller, { type: 'card', data: plainCard, deduplicate_token: false })
      : vault.tokens.create(caller, {
          type: 'card',
          data: { number: cardNumber(i), expiration_month: 1 + (i % 12), expiration_year: 2030 + (i % 8) },
          metadata: { customer: `customer-${i}`, plan: i % 3 === 0 ? 'gold' : 'free' },
          search_indexes: ['{{ data.number | reveal_last: 4 }}'],
        });
  return async function createRange(from, to) {
    for (let i = from; i < to; i += CONCURRENCY) {
      const batch = [];
      for (let k = i; k < Math.min(to, i + CONCURRENCY); k++) batch.push(create(k));
      await Promise.all(batch);
    }
  };
}

async function sqlite(plain = false) {
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-bytes-'));
  try {
    const filename = join(dir, 'bytes.db');
    const store = createSqliteStore({ filename });
    const vault = await createVault({ store, masterKey: generateMasterKey(), sweepIntervalMs: 0 });
    const db = store.database;
    const createRange = await fill(vault, plain);
    const pageSize = db.pragma('page_size', { simple: true });
    // Warm up the trees with the first half, then count the WAL frames the second half writes.
    await createRange(0, TOKENS / 2);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.pragma('wal_autocheckpoint = 0');
    await createRange(TOKENS / 2, TOKENS);
    const frames = statSync(`${filename}-wal`).size / (pageSize + 24);
    db.pragma('wal_checkpoint(TRUNCATE)');
    const rows = db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name').all();
    const tokenBytes = rows.filter((r) => TOKEN_TABLES.test(r.name)).reduce((sum, r) => sum + r.bytes, 0);
    const auditBytes = rows.filter((r) => /^(audit_log|sqlite_autoindex_audit_log)/.test(r.name)).reduce((sum, r) => sum + r.bytes, 0);
    const detail = Object.fromEntries(rows.filter((r) => TOKEN_TABLES.test(r.name)).map((r) => [r.name, Math.round(r.bytes / TOKENS)]));
    await vault.close();
    return {
      store: plain ? 'sqlite, one plain card' : 'sqlite',
      tokens: TOKENS,
      bytesPerToken: Math.round(tokenBytes / TOKENS),
      auditBytesPerToken: Math.round(auditBytes / TOKENS),
      walPagesPerToken: +(frames / (TOKENS / 2)).toFixed(2),
      detail,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgres() {
  const schema = `bench_bytes_${process.pid}`;
  const store = createPostgresStore({ connectionString: PG_URL, schema });
  const vault = await createVault({ store, masterKey: generateMasterKey(), sweepIntervalMs: 0 });
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    const createRange = await fill(vault);
    await createRange(0, TOKENS);
    await admin.query(`VACUUM ANALYZE`);
    const { rows } = await admin.query(
      `SELECT c.relname AS name, pg_total_relation_size(c.oid)::bigint AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace ` +
        `WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [schema],
    );
    const tokenRows = rows.filter((r) => TOKEN_TABLES.test(r.name));
    const tokenBytes = tokenRows.reduce((sum, r) => sum + Number(r.bytes), 0);
    const auditBytes = rows.filter((r) => r.name === 'audit_log').reduce((sum, r) => sum + Number(r.bytes), 0);
    const detail = Object.fromEntries(tokenRows.map((r) => [r.name, Math.round(Number(r.bytes) / TOKENS)]));
    return { store: 'postgres', tokens: TOKENS, bytesPerToken: Math.round(tokenBytes / TOKENS), auditBytesPerToken: Math.round(auditBytes / TOKENS), detail };
  } finally {
    await vault.close();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

const which = process.argv[2] ?? 'both';
if (which === 'sqlite' || which === 'both') console.log(JSON.stringify(await sqlite()));
if (which === 'sqlite' || which === 'both') console.log(JSON.stringify(await sqlite(true)));
if (which === 'postgres' || which === 'both') console.log(JSON.stringify(await postgres()));
