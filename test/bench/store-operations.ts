// CPU per store operation, on both stores, for the operations written once in src/storage/areas
// (docs/development.md, "Storage: one SQL text per operation"; figures in docs/performance.md).
// Process CPU (user + system) per operation while one caller runs them back to back: on SQLite
// that is the whole cost; on PostgreSQL it is this process's share (driver, rendering, executor).
//   npx tsx test/bench/store-operations.ts            (SQLite; TOKENVAULT_TEST_PG_URL adds PostgreSQL)
//   BENCH_SRC=<checkout>/src npx tsx test/bench/store-operations.ts   (the same against another checkout)
//   BENCH_OP=key-lookup npx tsx test/bench/store-operations.ts       (findApplicationKeys, which every request with a key runs)
//   BENCH_OP=reactors npx tsx test/bench/store-operations.ts          (getReactor, then recordWebhookAttempt, instead)
//   BENCH_OP=tokens npx tsx test/bench/store-operations.ts            (replaceCiphertext, then getDeletedToken: token statements written once)
//   BENCH_OP=read npx tsx test/bench/store-operations.ts             (getToken of a card with a fingerprint, twice: the token read's store call)
//   BENCH_OP=list npx tsx test/bench/store-operations.ts             (listTokens, a page of 20 of those cards, twice: per page)
//   BENCH_OP=audit npx tsx test/bench/store-operations.ts             (appendAudit of a batch, sealed into the chain, then unsealed: per entry;
//                                                                     BENCH_AUDIT_BATCH entries per batch, BENCH_AUDIT_BATCHES batches)
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

const SRC = resolve(process.env.BENCH_SRC ?? new URL('../../src', import.meta.url).pathname);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3000);
const PG_URL = process.env.TOKENVAULT_TEST_PG_URL;
const OP = process.env.BENCH_OP ?? 'idempotency';

type AnyStore = {
  migrate(): Promise<unknown>;
  close(): Promise<void>;
  createTenant(t: object): Promise<unknown>;
  claimIdempotencyKey(r: object, now: number): Promise<unknown>;
  completeIdempotencyKey(c: object, r: object): Promise<void>;
  releaseIdempotencyKey(c: object): Promise<void>;
  createApplication(a: object, k: object): Promise<unknown>;
  findApplicationKeys(lookup: string): Promise<unknown[]>;
  createReactor(r: object): Promise<unknown>;
  getReactor(tenantId: string, id: string): Promise<unknown>;
  createWebhookDelivery(d: object): Promise<unknown>;
  recordWebhookAttempt(tenantId: string, id: string, expected: number, attempt: object, outcome: object): Promise<boolean>;
  createToken(token: object, now: number): Promise<unknown>;
  deleteToken(tenantId: string, id: string, deletedBy: string, audit: object, now: number): Promise<boolean>;
  replaceCiphertext(tenantId: string, id: string, expected: Uint8Array, next: object): Promise<boolean>;
  getDeletedToken(tenantId: string, id: string): Promise<unknown>;
  getToken(tenantId: string, id: string, now: number): Promise<unknown>;
  listTokens(tenantId: string, filter: object, page: object, now: number): Promise<{ items: unknown[] }>;
  appendAudit(entries: readonly object[], sealer?: object): Promise<void>;
};

/** Re-encryption's compare-and-set on one token (alternating between two ciphertexts), then a deleted token's reference read. */
async function tokenOps(store: AnyStore, tenantId: string): Promise<(i: number) => Promise<void>> {
  const { makeToken, makeAudit } = (await import(pathToFileURL(`${SRC}/testing/store-fixtures.ts`).href)) as {
    makeToken(o: object): { id: string; ciphertext: Uint8Array };
    makeAudit(o: object): object;
  };
  const kept = makeToken({ tenantId, ciphertext: Buffer.from('a') });
  const gone = makeToken({ tenantId });
  await store.createToken(kept, 1);
  await store.createToken(gone, 1);
  await store.deleteToken(tenantId, gone.id, 'bench', makeAudit({ tenantId, operation: 'token:delete', resourceId: gone.id }), 2);
  const sealed = [Buffer.from('a'), Buffer.from('b')];
  let turn = 0;
  return async () => {
    const next = sealed[(turn + 1) % 2]!;
    if (!(await store.replaceCiphertext(tenantId, kept.id, sealed[turn % 2]!, { ciphertext: next, keyVersion: 1, cvcPurgeAt: null }))) throw new Error('not replaced');
    turn++;
    if ((await store.getDeletedToken(tenantId, gone.id)) === null) throw new Error('the reference was not found');
  };
}

/** A card token with a fingerprint and its type's defaults, as a card created with none of its own is stored (the lean columns NULL). */
async function cardToken(tenantId: string, id?: string): Promise<object & { id: string }> {
  const { makeToken } = (await import(pathToFileURL(`${SRC}/testing/store-fixtures.ts`).href)) as { makeToken(o: object): object & { id: string } };
  const { getTokenType } = (await import(pathToFileURL(`${SRC}/tokens/token-types.ts`).href)) as {
    getTokenType(name: string): { defaultFingerprintExpression: string; defaultMask: unknown; defaultContainer: string };
  };
  const card = getTokenType('card');
  return makeToken({
    ...(id === undefined ? {} : { id }),
    tenantId,
    type: 'card',
    ciphertext: Buffer.alloc(96, 7),
    fingerprint: 'Yf8LqBk3s7SXjXoVQ0jTjz4ArKUQmxy4RAJd2WmSZhs',
    fingerprintExpression: card.defaultFingerprintExpression,
    mask: card.defaultMask,
    containers: [card.defaultContainer],
  });
}

/** The read by id of a card (what every GET /tokens/{id} asks of the store), twice. */
async function readOps(store: AnyStore, tenantId: string): Promise<(i: number) => Promise<void>> {
  const token = await cardToken(tenantId);
  await store.createToken(token, 1);
  return async () => {
    if ((await store.getToken(tenantId, token.id, 2)) === null || (await store.getToken(tenantId, token.id, 2)) === null) throw new Error('the token was not found');
  };
}

/** A page of 20 such cards, twice. */
async function listOps(store: AnyStore, tenantId: string): Promise<(i: number) => Promise<void>> {
  for (let i = 0; i < 20; i++) await store.createToken(await cardToken(tenantId, `card-${i}`), 1);
  const page = { mode: 'cursor', size: 20 };
  return async () => {
    if ((await store.listTokens(tenantId, {}, page, 2)).items.length + (await store.listTokens(tenantId, {}, page, 2)).items.length !== 40) throw new Error('a page is short');
  };
}

/** One key lookup: the credentials area's hot statement (a join of the key to its application). */
async function measureKeyLookup(label: string, store: AnyStore, tenantId: string): Promise<void> {
  const at = 1;
  const app = { tenantId, id: 'app', name: 'bench', type: 'private', permissions: ['token:read'], rules: [], createdAt: at, createdBy: null, modifiedBy: null, modifiedAt: null };
  const key = { tenantId, applicationId: 'app', id: 'k1', keyHash: 'h', keyLookup: 'lookup', createdBy: null, createdAt: at, grants: null };
  await store.createApplication(app, key);
  for (let i = 0; i < 300; i++) if ((await store.findApplicationKeys('lookup')).length !== 1) throw new Error('the key was not found');
  const start = process.cpuUsage();
  for (let i = 0; i < ROUNDS; i++) await store.findApplicationKeys('lookup');
  const cpu = process.cpuUsage(start);
  console.log(`${label}: ${((cpu.user + cpu.system) / ROUNDS).toFixed(1)} µs CPU per findApplicationKeys (${ROUNDS} lookups)`);
  await store.close();
}

/** The audit log's append of one batch (the audit writer's, every 50 ms under load): sealed, then unsealed. */
async function measureAudit(label: string, store: AnyStore, tenantId: string): Promise<void> {
  const { chainSealer } = (await import(pathToFileURL(`${SRC}/audit/audit-chain.ts`).href)) as {
    chainSealer(keys: ReadonlyMap<string, Buffer>, tenants: readonly string[], now: number): object;
  };
  const BATCH = Number(process.env.BENCH_AUDIT_BATCH ?? 32);
  // Fewer batches than this measure mostly the warm-up (statements, code, the chain's first entries).
  const BATCHES = Number(process.env.BENCH_AUDIT_BATCHES ?? 3000);
  const keys = new Map([[tenantId, Buffer.alloc(32, 7)]]);
  const batch = (i: number) =>
    Array.from({ length: BATCH }, (_, j) => ({ tenantId, actor: 'application:bench', operation: 'token:read', resourceId: `t${i}-${j}`, outcome: 'success', detail: null, at: i }));
  const perEntry: Record<string, number> = {};
  for (const sealed of [true, false]) {
    const append = (i: number) => store.appendAudit(batch(i), sealed ? chainSealer(keys, [], i) : undefined);
    for (let i = 0; i < 100; i++) await append(i);
    const start = process.cpuUsage();
    for (let i = 0; i < BATCHES; i++) await append(i);
    const cpu = process.cpuUsage(start);
    perEntry[sealed ? 'sealed' : 'unsealed'] = (cpu.user + cpu.system) / (BATCHES * BATCH);
  }
  console.log(
    `${label}: ${perEntry['sealed']!.toFixed(2)} µs CPU per entry sealed, ${perEntry['unsealed']!.toFixed(2)} unsealed (appendAudit of ${BATCH} entries, ${BATCHES} batches each)`,
  );
  await store.close();
}

/** A reactor read (the hot read of every invocation), then an attempt recorded on a delivery (read, append, write). */
async function reactorOps(store: AnyStore, tenantId: string): Promise<(i: number) => Promise<void>> {
  const reactor = {
    tenantId,
    id: 'r1',
    name: 'bench',
    formulaId: null,
    code: 'x',
    configuration: {},
    applicationId: null,
    boundGrants: null,
    createdBy: null,
    createdAt: 1,
    modifiedBy: null,
    modifiedAt: null,
  };
  await store.createReactor(reactor);
  const delivery = {
    tenantId,
    id: 'd1',
    webhookId: null,
    requestId: null,
    eventType: 'e',
    url: 'https://example.test/',
    payload: Buffer.from('{}'),
    status: 'pending',
    attempts: 0,
    history: [],
    nextAttemptAt: 1,
    createdAt: 1,
    completedAt: null,
  };
  await store.createWebhookDelivery(delivery);
  let attempts = 0;
  return async () => {
    await store.getReactor(tenantId, 'r1');
    const outcome = { status: 'pending', nextAttemptAt: 2, completedAt: null };
    if (!(await store.recordWebhookAttempt(tenantId, 'd1', attempts, { at: 1, status: 500, error: 'e', durationMs: 1 }, outcome))) throw new Error('attempt not recorded');
    attempts++;
  };
}

async function measure(label: string, store: AnyStore): Promise<void> {
  await store.migrate();
  const tenantId = '00000000-0000-4000-8000-00000000b001';
  await store.createTenant({ id: tenantId, name: 'bench', createdAt: 1 });
  if (OP === 'key-lookup') return measureKeyLookup(label, store, tenantId);
  if (OP === 'audit') return measureAudit(label, store, tenantId);
  const run =
    OP === 'reactors'
      ? await reactorOps(store, tenantId)
      : OP === 'tokens'
        ? await tokenOps(store, tenantId)
        : OP === 'read' || OP === 'list'
          ? await (OP === 'read' ? readOps : listOps)(store, tenantId)
          : async (i: number) => {
              const record = {
                tenantId,
                applicationId: 'app',
                key: `k${i}`,
                requestHash: 'h',
                state: 'in_flight',
                status: null,
                body: null,
                createdAt: 10,
                expiresAt: 10_000_000,
                withdrawAt: null,
              };
              await store.claimIdempotencyKey(record, 10);
              const claim = { tenantId, applicationId: 'app', key: `k${i}`, claimedAt: 10 };
              if (i % 2 === 0) await store.completeIdempotencyKey(claim, { status: 200, body: Buffer.from('{}'), tokenIds: [], expiresAt: 10_000_000 });
              else await store.releaseIdempotencyKey(claim);
            };
  for (let i = 0; i < 300; i++) await run(-1 - i); // warm up: statements prepared, code optimized
  const start = process.cpuUsage();
  const wall = performance.now();
  for (let i = 0; i < ROUNDS; i++) await run(i);
  const cpu = process.cpuUsage(start);
  const perOp = (cpu.user + cpu.system) / (ROUNDS * 2);
  console.log(
    `${label}: ${perOp.toFixed(1)} µs CPU per operation (${OP === 'reactors' ? 'getReactor, then recordWebhookAttempt' : OP === 'tokens' ? 'replaceCiphertext, then getDeletedToken' : OP === 'read' ? 'getToken' : OP === 'list' ? 'listTokens, a page of 20' : 'claim, then complete or release'}; ${ROUNDS * 2} operations, ${(((performance.now() - wall) * 1000) / (ROUNDS * 2)).toFixed(1)} µs wall)`,
  );
  await store.close();
}

const sqlite = (await import(pathToFileURL(`${SRC}/sqlite.ts`).href)) as { createSqliteStore(o: object): AnyStore };
await measure('sqlite', sqlite.createSqliteStore({}));
if (PG_URL !== undefined) {
  const pg = (await import(pathToFileURL(`${SRC}/postgres.ts`).href)) as { createPostgresStore(o: object): AnyStore & { pool: { query(t: string): Promise<unknown> } } };
  const schema = `bench_ops_${process.pid}`;
  const store = pg.createPostgresStore({ connectionString: PG_URL, schema, max: 2 });
  try {
    await measure('postgres', store);
  } finally {
    const admin = pg.createPostgresStore({ connectionString: PG_URL, schema: 'public', max: 2 });
    await admin.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.close();
  }
}
