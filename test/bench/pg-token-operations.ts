// CPU per token operation on PostgreSQL: createToken, getToken, a list by one metadata pair and a
// search by one blind index value, one caller running each back to back on a tenant of 10,000
// tokens (two metadata pairs and one search value each). Two figures per operation: this process's
// CPU (driver, statements, row mapping) and the server's (the store's backends, from /proc: the
// server must run on this machine), both per operation.
//   TOKENVAULT_TEST_PG_URL=postgres://postgres@127.0.0.1:5432/test npx tsx test/bench/pg-token-operations.ts
//   BENCH_SRC=<checkout>/src ... npx tsx test/bench/pg-token-operations.ts   (the same against another checkout)
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';

const SRC = resolve(process.env.BENCH_SRC ?? new URL('../../src', import.meta.url).pathname);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2000);
const TOKENS = Number(process.env.BENCH_TOKENS ?? 10_000);
const URL_ = process.env.TOKENVAULT_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TENANT = '00000000-0000-4000-8000-00000000b001';
const NOW = 1_700_000_000_000;

type AnyStore = {
  migrate(): Promise<unknown>;
  close(): Promise<void>;
  createToken(token: object, now: number): Promise<{ status: string }>;
  getToken(tenantId: string, id: string, now: number): Promise<unknown>;
  listTokens(tenantId: string, filter: object, page: object, now: number): Promise<{ items: unknown[] }>;
};

const hash = (text: string) => createHash('sha256').update(text).digest().toString('base64url');

/** A card token as the vault stores it: its type's defaults, two metadata pairs, one search value. */
const token = (i: number) => ({
  tenantId: TENANT,
  id: `0190aaaa-0000-7000-8000-${String(i).padStart(12, '0')}`,
  type: 'card',
  ciphertext: createHash('sha512').update(`ciphertext ${i}`).digest(),
  keyVersion: 1,
  fingerprint: hash(`fingerprint ${i}`),
  fingerprintExpression: '{{ data.number }}',
  mask: { number: '{{ data.number | reveal_last: 4 }}', expiration_month: '{{ data.expiration_month }}', expiration_year: '{{ data.expiration_year }}' },
  containers: ['/pci/high/'],
  metadata: { customer: `customer-${i}`, plan: i % 3 === 0 ? 'gold' : 'free' },
  searchIndexes: ['{{ data.number | reveal_last: 4 }}'],
  searchHashes: [hash(`search ${i % (TOKENS / 2)}`)],
  deduplicate: false,
  createdBy: '00000000-0000-4000-8000-0000000000a1',
  createdAt: NOW + i,
  modifiedBy: null,
  modifiedAt: null,
  expiresAt: null,
  cvcPurgeAt: null,
});

/** CPU ticks (user + system) of the server processes serving `application`, in microseconds. */
async function serverMicros(admin: pg.Client, application: string): Promise<number> {
  const { rows } = await admin.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [application]);
  let ticks = 0;
  for (const { pid } of rows) {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1_000_000) / 100;
}

const { createPostgresStore } = (await import(pathToFileURL(`${SRC}/postgres.ts`).href)) as { createPostgresStore: (o: object) => AnyStore };
const schema = `bench_ops_${process.pid}`;
const application = `tokenvault_bench_${process.pid}`;
const store = createPostgresStore({ connectionString: `${URL_}?application_name=${application}`, schema, max: 2 });
const admin = new pg.Client({ connectionString: URL_ });
await admin.connect();
try {
  await store.migrate();
  for (let i = 0; i < TOKENS; i += 50) await Promise.all(Array.from({ length: 50 }, (_, k) => store.createToken(token(i + k), NOW)));
  await admin.query(`VACUUM ANALYZE "${schema}".tokens`);
  const page = { mode: 'cursor', size: 10 };
  let next = TOKENS;
  const operations: [string, (i: number) => Promise<unknown>][] = [
    ['createToken', () => store.createToken(token(next++), NOW)],
    ['getToken', (i) => store.getToken(TENANT, token((i * 7919) % TOKENS).id, NOW)],
    ['list by a metadata pair', (i) => store.listTokens(TENANT, { metadata: { customer: `customer-${(i * 7919) % TOKENS}` } }, page, NOW)],
    ['search by a blind index value', (i) => store.listTokens(TENANT, { searchHashes: [hash(`search ${(i * 7919) % (TOKENS / 2)}`)] }, page, NOW)],
  ];
  for (const [name, run] of operations) {
    for (let i = 0; i < 200; i++) await run(i + ROUNDS); // warm up: statements prepared, code optimized
    const server = await serverMicros(admin, application);
    const start = process.cpuUsage();
    const wall = performance.now();
    for (let i = 0; i < ROUNDS; i++) await run(i);
    const cpu = process.cpuUsage(start);
    const elapsed = performance.now() - wall;
    const serverPerOp = ((await serverMicros(admin, application)) - server) / ROUNDS;
    const clientPerOp = (cpu.user + cpu.system) / ROUNDS;
    console.log(`${name}: ${clientPerOp.toFixed(0)} µs client CPU, ${serverPerOp.toFixed(0)} µs server CPU, ${((elapsed * 1000) / ROUNDS).toFixed(0)} µs wall per operation`);
  }
} finally {
  await store.close();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}
