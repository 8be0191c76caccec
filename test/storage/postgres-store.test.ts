import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ConflictError, ServiceUnavailableError, ValidationError } from '../../src/errors/errors.js';
import { createPostgresStore, redactConnectionString, type PgPool, type PostgresStore } from '../../src/postgres.js';
import { MIGRATIONS, runMigrations } from '../../src/storage/postgres/migrations.js';
import { decodeCursor, encodeCursor } from '../../src/storage/postgres/paging.js';
import { MAX_ATTEMPTS, PgExecutor } from '../../src/storage/postgres/pg-executor.js';
import { MAX_NAMED_TEXT_LENGTH } from '../../src/storage/postgres/statement-names.js';
import { parseBytea } from '../../src/storage/postgres/type-parsers.js';
import type { StoredToken } from '../../src/storage/store.js';
import { runStoreConformance } from '../../src/testing/index.js';
import { APP_A, T0, TENANT_A, makeAudit, makeFormula, makeReactor, makeToken } from '../../src/testing/store-conformance.js';
import { pooledPostgresStore, releaseSchema } from '../support/pg-schema-pool.js';
import { recordingPool, statementsWithoutTenant } from '../support/tenant-statements.js';
import { PGBOUNCER_SKIP_REASON, PGBOUNCER_URL, PG_SKIP_REASON, PG_URL, adminPool, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';
import { describeEachPgRoute } from '../support/stores.js';
import { validationErrorOf } from '../support/field-errors.js';

const audit = (token: StoredToken) => makeAudit({ tenantId: token.tenantId, resourceId: token.id });

/** A pool of the right shape whose query answers from a script (no server). */
function scriptedPool(answer: (text: string, attempt: number) => unknown): PgPool & { texts: string[] } {
  const texts: string[] = [];
  let calls = 0;
  const query = async ({ text }: { text: string }) => {
    texts.push(text);
    const result = answer(text, ++calls);
    if (result instanceof Error) throw result;
    return { rows: [], rowCount: 0, ...(result as object) };
  };
  return {
    texts,
    query,
    connect: async () => ({ query, release: () => undefined }),
    end: async () => undefined,
  };
}
const pgError = (code: string) => Object.assign(new Error(`pg error ${code}`), { code, severity: 'ERROR' });

describe('createPostgresStore options', () => {
  const url = 'postgres://vault:s3cret-pw@127.0.0.1:5432/vault';
  const pool = scriptedPool(() => ({}));

  it('needs exactly one of connectionString and pool, naming the option', () => {
    expect(Object.keys(validationErrorOf(() => createPostgresStore({})).errors)).toEqual(['connectionString']);
    expect(Object.keys(validationErrorOf(() => createPostgresStore({ connectionString: url, pool })).errors)).toEqual(['pool']);
    expect(Object.keys(validationErrorOf(() => createPostgresStore(undefined as never)).errors)).toEqual(['connectionString']);
  });

  it('rejects bad values and unknown options, each under its own name, never echoing the connection string', () => {
    const bad = validationErrorOf(() => createPostgresStore({ connectionString: 'mysql://vault:s3cret-pw@db/vault' }));
    expect(Object.keys(bad.errors)).toEqual(['connectionString']);
    expect(bad.message).not.toContain('s3cret-pw');
    expect(validationErrorOf(() => createPostgresStore({ connectionString: 'not a url' })).errors).toHaveProperty('connectionString');
    expect(validationErrorOf(() => createPostgresStore({ connectionString: 42 as never })).errors).toHaveProperty('connectionString');
    expect(validationErrorOf(() => createPostgresStore({ pool: {} as never })).errors).toHaveProperty('pool');
    for (const schema of ['', 'Public', 'has-dash', 'a b', '1abc', 'pg_mine', 'x'.repeat(64), '"quoted"']) {
      expect(Object.keys(validationErrorOf(() => createPostgresStore({ connectionString: url, schema })).errors), schema).toEqual(['schema']);
    }
    for (const max of [0, 1, 1.5, 1001, '10']) {
      expect(Object.keys(validationErrorOf(() => createPostgresStore({ connectionString: url, max: max as number })).errors), String(max)).toEqual(['max']);
    }
    expect(Object.keys(validationErrorOf(() => createPostgresStore({ pool, max: 5 })).errors)).toEqual(['max']);
    for (const preparedStatements of ['true', 1, null]) {
      expect(Object.keys(validationErrorOf(() => createPostgresStore({ pool, preparedStatements: preparedStatements as never })).errors)).toEqual(['preparedStatements']);
    }
    expect(Object.keys(validationErrorOf(() => createPostgresStore({ connectionString: url, database: 'x' } as never)).errors)).toEqual(['database']);
  });

  it('accepts valid options without connecting; the schema defaults to public', async () => {
    const store = createPostgresStore({ connectionString: url, schema: 'vault_2', max: 2 });
    expect(store.schema).toBe('vault_2');
    await store.close();
    await store.close();
    const shared = createPostgresStore({ pool });
    expect(shared.schema).toBe('public');
    expect(shared.pool).toBe(pool);
  });
});

describe('PostgreSQL store helpers (no server)', () => {
  it('redacts the password of a connection string', () => {
    expect(redactConnectionString('postgres://app:s3cret@db:5432/vault')).toBe('postgres://app:***@db:5432/vault');
    expect(redactConnectionString('postgresql://app@db/vault?sslmode=require')).toBe('postgresql://app@db/vault?sslmode=require');
    expect(redactConnectionString('postgres://db/vault?password=s3cret&sslpassword=k')).not.toMatch(/s3cret|=k\b/);
    expect(redactConnectionString('host=db password=s3cret')).toBe('<connection string>');
  });

  it('encodes cursors opaquely and rejects cursors it would not issue', () => {
    expect(decodeCursor(encodeCursor(1))).toBe(1);
    expect(decodeCursor(encodeCursor(9_007_199_254_740_991))).toBe(9_007_199_254_740_991);
    const b64 = (text: string) => Buffer.from(text).toString('base64url');
    for (const bad of ['', b64('0'), b64('-5'), b64('01'), b64('1.5'), b64('99999999999999999'), `${b64('12')}==`, '%%%']) {
      expect(() => decodeCursor(bad), bad).toThrow(ValidationError);
    }
  });

  it('parses bytea in hex and escape output formats', () => {
    expect(parseBytea('\\x00ff10')).toEqual(Buffer.from([0, 255, 16]));
    expect(parseBytea('a\\\\b\\000\\377')).toEqual(Buffer.from([0x61, 0x5c, 0x62, 0, 255]));
  });

  it('retries serialization failures and deadlocks, then succeeds', async () => {
    const pool = scriptedPool((_text, attempt) => (attempt === 1 ? pgError('40001') : attempt === 2 ? pgError('40P01') : { rows: [{ ok: 1 }], rowCount: 1 }));
    expect((await new PgExecutor(pool).query('SELECT 1')).rows).toEqual([{ ok: 1 }]);
    expect(pool.texts).toHaveLength(3);
  });

  it('gives up after MAX_ATTEMPTS, and does not retry other errors', async () => {
    const always = scriptedPool(() => pgError('40001'));
    // Still refused after every attempt: a 503 (the conflict is transient), not a 500.
    await expect(new PgExecutor(always).query('SELECT 1')).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(always.texts).toHaveLength(MAX_ATTEMPTS);
    const other = scriptedPool(() => pgError('42P01'));
    await expect(new PgExecutor(other).query('SELECT 1')).rejects.toMatchObject({ code: '42P01' });
    expect(other.texts).toHaveLength(1);
  });

  it('translates a unique violation into ConflictError without the driver detail', async () => {
    const pool = scriptedPool(() => Object.assign(pgError('23505'), { detail: 'Key (id)=(secret-id) already exists.' }));
    const error = await new PgExecutor(pool).query('INSERT').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(String((error as Error).message)).not.toContain('secret-id');
  });

  it('reports text PostgreSQL cannot store (NUL) as a ValidationError', async () => {
    for (const code of ['22021', '22P05']) {
      await expect(new PgExecutor(scriptedPool(() => pgError(code))).query('INSERT')).rejects.toBeInstanceOf(ValidationError);
    }
  });

  it('retries a whole transaction, rolling back the failed attempt', async () => {
    const pool = scriptedPool((text, attempt) => (text === 'COMMIT' && attempt < 5 ? pgError('40001') : {}));
    let runs = 0;
    const result = await new PgExecutor(pool).transaction(async (tx) => {
      runs++;
      await tx.query('UPDATE x');
      return 'done';
    });
    expect(result).toBe('done');
    expect(runs).toBe(2);
    const begin = 'BEGIN ISOLATION LEVEL READ COMMITTED';
    expect(pool.texts).toEqual([begin, 'UPDATE x', 'COMMIT', 'ROLLBACK', begin, 'UPDATE x', 'COMMIT']);
  });

  it('names statements with parameters by a hash of their text, only with preparedStatements', async () => {
    const names = async (preparedStatements: boolean) => {
      const seen: (string | undefined)[] = [];
      const pool = scriptedPool(() => ({}));
      const recording = { ...pool, query: async (config: { name?: string; text: string }) => (seen.push(config.name), pool.query(config)) };
      const db = new PgExecutor(recording, { preparedStatements });
      await db.query('SELECT $1::int AS a', [1]);
      await db.query('SELECT $1::int AS b', [2]);
      await db.query('SELECT $1::int AS a', [3]);
      await db.query('SELECT 1');
      return seen;
    };
    expect(await names(false)).toEqual([undefined, undefined, undefined, undefined]);
    const [a, b, again, plain] = await names(true);
    expect(a).toMatch(/^tokenvault_[0-9a-f]{40}$/);
    expect([b, again, plain]).toEqual([expect.not.stringMatching(`^${a}$`), a, undefined]);
    // Another store (another process behind a pooler) gives the text the same name: never another statement's.
    expect((await names(true))[0]).toBe(a);
    // A text longer than MAX_NAMED_TEXT_LENGTH (a search of many terms, shaped by the caller) runs unnamed.
    const seen: (string | undefined)[] = [];
    const pool = scriptedPool(() => ({}));
    const db = new PgExecutor({ ...pool, query: async (config: { name?: string; text: string }) => (seen.push(config.name), pool.query(config)) }, { preparedStatements: true });
    await db.query(`SELECT $1::int AS a /*${'x'.repeat(MAX_NAMED_TEXT_LENGTH)}*/`, [1]);
    expect(seen).toEqual([undefined]);
  });

  it('when a pooler loses a named statement, stops naming and runs the work again unnamed', async () => {
    for (const code of ['26000', '42P05']) {
      const seen: { name?: string; text: string }[] = [];
      const pool = scriptedPool(() => ({ rows: [{ ok: 1 }], rowCount: 1 }));
      const losing = {
        ...pool,
        query: async (config: { name?: string; text: string }) => {
          seen.push(config);
          return config.name === undefined ? pool.query(config) : Promise.reject(pgError(code));
        },
      };
      losing.connect = async () => ({ query: losing.query, release: () => undefined });
      const db = new PgExecutor(losing, { preparedStatements: true });
      expect((await db.query('SELECT $1::int AS ok', [1])).rows).toEqual([{ ok: 1 }]);
      expect(db.naming).toBe(false);
      expect(seen.map((c) => c.name === undefined)).toEqual([false, true]);
      // A transaction that lost one is rolled back and run again whole, unnamed.
      const named = new PgExecutor(losing, { preparedStatements: true });
      seen.length = 0;
      let runs = 0;
      expect(await named.transaction(async (tx) => (runs++, (await tx.query('UPDATE x SET a = $1', [1])).rowCount))).toBe(1);
      expect(runs).toBe(2);
      expect(seen.map((c) => `${c.text}${c.name === undefined ? '' : ' (named)'}`)).toEqual([
        'BEGIN ISOLATION LEVEL READ COMMITTED',
        'UPDATE x SET a = $1 (named)',
        'ROLLBACK',
        'BEGIN ISOLATION LEVEL READ COMMITTED',
        'UPDATE x SET a = $1',
        'COMMIT',
      ]);
      // A lock's transaction (withLock) that lost its statement before holding anything starts again.
      const holder = new PgExecutor(losing, { preparedStatements: true });
      expect(
        await holder.holding(
          async (tx) => void (await tx.query('SELECT pg_advisory_xact_lock($1)', [1])),
          async () => 'held',
        ),
      ).toBe('held');
      expect(holder.naming).toBe(false);
    }
    // Any other failure leaves naming on.
    const failing = new PgExecutor(
      scriptedPool(() => pgError('42P01')),
      { preparedStatements: true },
    );
    await expect(failing.query('SELECT $1::int', [1])).rejects.toMatchObject({ code: '42P01' });
    expect(failing.naming).toBe(true);
  });

  it('has one migration per shipped schema version', () => {
    expect(MIGRATIONS.length).toBeGreaterThanOrEqual(1);
  });
});

// Not describePostgres: the conformance run below is awaited at the top level of the file.
if (PG_URL === undefined) {
  describe.skip(`PostgreSQL store (${PG_SKIP_REASON})`, () => {
    it('runs the store conformance suite and the PostgreSQL-specific tests against a server', () => undefined);
  });
} else {
  const url = PG_URL;
  afterAll(endAdmin);

  const open = (options: { schema?: string; connectionString?: string; max?: number } = {}) =>
    createPostgresStore({ connectionString: options.connectionString ?? url, schema: options.schema ?? freshSchema(), max: options.max ?? 4 });
  const discard = async (...stores: PostgresStore[]) => {
    for (const store of stores) await store.close();
    for (const schema of new Set(stores.map((s) => s.schema))) await dropSchema(schema);
  };
  /** The URL with server options (`-c name=value`) for every connection. */
  const withServerOptions = (options: string) => `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent(options)}`;

  // The conformance suite runs on a pool that records every statement: each one names the tenant
  // or is a named exception, so the schema can be distributed by tenant (docs/scaling.md).
  // It runs with named statements (the default); unnamed ones, the same SQL, run through PgBouncer
  // in the multi-instance tests and in pg-round-trips.test.ts.
  const recorder = recordingPool(url, 8);
  afterAll(() => recorder.pool.end());
  // Each test's schema is fresh from the migrations: migrated for it or taken from the run's pool
  // (test/support/pg-schema-pool.ts); the migrations themselves are tested below, on their own schemas.
  await runStoreConformance(
    'postgres (a fresh schema per test)',
    () => pooledPostgresStore({ pool: recorder.pool, schema: freshSchema() }),
    (store) => releaseSchema((store as PostgresStore).schema),
  );
  describe('PostgreSQL statements name the tenant', () => {
    it('every statement the conformance suite sent mentions tenant_id or is a named exception', () => {
      expect(recorder.seen.size, 'statements recorded: run it with the conformance suite above').toBeGreaterThan(50);
      expect(statementsWithoutTenant(recorder.seen)).toEqual([]);
      // The check itself: a read by id alone is caught.
      expect(statementsWithoutTenant(['SELECT t.id FROM "tv_x".tokens t WHERE t.id = $1'])).toHaveLength(1);
    });
  });

  describe('PostgreSQL migrations', () => {
    it('instances racing migrate() on a new schema apply each migration once', async () => {
      const schema = freshSchema('race');
      const stores = Array.from({ length: 4 }, () => open({ schema }));
      try {
        await Promise.all(stores.map((store) => store.migrate()));
        await Promise.all(stores.map((store) => store.migrate()));
        const { rows } = await adminPool().query(`SELECT version FROM "${schema}".tokenvault_migrations ORDER BY version`);
        expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
        const token = makeToken();
        expect(await stores[0]!.createToken(token, T0)).toEqual({ status: 'created' });
        expect(await stores[3]!.getToken(TENANT_A, token.id, T0)).not.toBeNull();
      } finally {
        await discard(...stores);
      }
    });

    it('migration 3 drops the idempotency records stored in the clear before it', async () => {
      const schema = freshSchema('m3');
      const store = open({ schema });
      try {
        // The schema as version 2 left it, holding a response in the clear.
        await runMigrations(new PgExecutor(adminPool() as unknown as PgPool), schema, MIGRATIONS.slice(0, 2));
        const plaintext = '{"data":{"number":"4000056655665556","cvc":"9753"}}';
        await adminPool().query(`INSERT INTO "${schema}".idempotency_keys VALUES ('t', 'a', 'k', 'h', 'done', 201, $1, 0, 9999999999999)`, [plaintext]);
        await store.migrate();
        const { rows } = await adminPool().query(`SELECT count(*)::int AS n FROM "${schema}".idempotency_keys`);
        expect(rows[0].n).toBe(0);
        const columns = await adminPool().query(
          "SELECT data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'idempotency_keys' AND column_name = 'body'",
          [schema],
        );
        expect(columns.rows[0].data_type).toBe('bytea');
      } finally {
        await discard(store);
      }
    });

    it('on an up-to-date schema, migrate() only reads (it runs on a read-only connection)', async () => {
      const schema = freshSchema('ro');
      const writer = open({ schema });
      const reader = open({ schema, connectionString: withServerOptions('-c default_transaction_read_only=on') });
      try {
        await writer.migrate();
        await reader.migrate();
        await expect(reader.createTenant({ id: 't', name: 't', createdAt: T0 })).rejects.toMatchObject({ code: '25006' });
      } finally {
        await discard(writer, reader);
      }
    });
  });

  // Directly and through PgBouncer in transaction mode (docs/scaling.md), when one is set.
  describeEachPgRoute('PostgreSQL concurrency across pools', (connectionString) => {
    const pair = async () => {
      const schema = freshSchema('pair');
      const one = open({ schema, max: 8, connectionString });
      const two = open({ schema, max: 8, connectionString });
      await one.migrate();
      await two.migrate();
      return [one, two] as const;
    };

    it('creates with one id from two pools: exactly one created', async () => {
      const [one, two] = await pair();
      try {
        for (let round = 0; round < 5; round++) {
          const tokens = Array.from({ length: 16 }, (_, i) => makeToken({ id: `contested-${round}`, ciphertext: new Uint8Array([i]) }));
          const results = await Promise.all(tokens.map((token, i) => (i % 2 ? one : two).createToken(token, T0)));
          expect(results.filter((r) => r.status === 'created')).toHaveLength(1);
          expect(results.filter((r) => r.status === 'id_conflict')).toHaveLength(15);
          expect((await one.listAudit(TENANT_A, { resourceId: `contested-${round}` }, { mode: 'cursor', size: 50 })).items).toEqual([]);
        }
      } finally {
        await discard(one, two);
      }
    });

    it('deduplicating creates with one fingerprint from two pools: exactly one created, the rest its duplicates', async () => {
      const [one, two] = await pair();
      try {
        for (let round = 0; round < 5; round++) {
          const tokens = Array.from({ length: 16 }, () => makeToken({ type: 'card', fingerprint: `fp-${round}`, deduplicate: true }));
          const results = await Promise.all(tokens.map((token, i) => (i % 2 ? one : two).createToken(token, T0)));
          const created = tokens.filter((_, i) => results[i]!.status === 'created');
          expect(created).toHaveLength(1);
          for (const result of results) if (result.status === 'duplicate') expect(result.existing.id).toBe(created[0]!.id);
          const listed = await one.listTokens(TENANT_A, { fingerprints: [`fp-${round}`] }, { mode: 'cursor', size: 50 }, T0);
          expect(listed.items.map((t) => t.id)).toEqual([created[0]!.id]);
        }
      } finally {
        await discard(one, two);
      }
    });

    it('a create racing the deletion of the same id never reuses it', async () => {
      const [one, two] = await pair();
      try {
        for (let i = 0; i < 30; i++) {
          const token = makeToken({ id: `doomed-${i}` });
          await one.createToken(token, T0);
          const [deleted, created] = await Promise.all([one.deleteToken(TENANT_A, token.id, APP_A, audit(token), T0), two.createToken(makeToken({ id: token.id }), T0)]);
          expect(deleted).toBe(true);
          expect(created).toEqual({ status: 'id_conflict' });
          expect(await two.getToken(TENANT_A, token.id, T0)).toBeNull();
        }
      } finally {
        await discard(one, two);
      }
    });

    it('concurrent updates keep the metadata index equal to the last committed metadata', async () => {
      const [one, two] = await pair();
      try {
        const token = makeToken({ metadata: { v: 'start' } });
        await one.createToken(token, T0);
        const colors = Array.from({ length: 12 }, (_, i) => `c${i}`);
        await Promise.all(colors.map((v, i) => (i % 2 ? one : two).updateToken({ ...token, metadata: { v } }, audit(token), T0)));
        const final = (await one.getToken(TENANT_A, token.id, T0))!.metadata.v!;
        const matching = [];
        for (const v of ['start', ...colors]) {
          if ((await two.listTokens(TENANT_A, { metadata: { v } }, { mode: 'cursor', size: 5 }, T0)).items.length > 0) matching.push(v);
        }
        expect(matching).toEqual([final]);
      } finally {
        await discard(one, two);
      }
    });

    it('keeps every guarantee when the database runs transactions SERIALIZABLE (retrying serialization failures)', async () => {
      const schema = freshSchema('ser');
      const serializable = withServerOptions('-c default_transaction_isolation=serializable');
      const one = open({ schema, connectionString: serializable, max: 8 });
      const two = open({ schema, connectionString: serializable, max: 8 });
      try {
        await Promise.all([one.migrate(), two.migrate()]);
        const tokens = Array.from({ length: 12 }, () => makeToken({ type: 'card', fingerprint: 'fp-ser', deduplicate: true }));
        const results = await Promise.all(tokens.map((token, i) => (i % 2 ? one : two).createToken(token, T0)));
        expect(results.filter((r) => r.status === 'created')).toHaveLength(1);
        const claims = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            (i % 2 ? one : two).claimIdempotencyKey(
              { tenantId: TENANT_A, applicationId: APP_A, key: 'k', requestHash: `h${i}`, state: 'in_flight', status: null, body: null, createdAt: T0, expiresAt: T0 + 1000 },
              T0,
            ),
          ),
        );
        expect(claims.filter((c) => c.claimed)).toHaveLength(1);
      } finally {
        await discard(one, two);
      }
    });

    it('withLock runs one callback per name at a time across instances', async () => {
      const [one, two] = await pair();
      try {
        const order: string[] = [];
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        const first = one.withLock('setup', async () => {
          order.push('one in');
          await held;
          order.push('one out');
        });
        await vi.waitFor(() => expect(order).toEqual(['one in']));
        const second = two.withLock('setup', async () => {
          order.push('two in');
        });
        // The second instance waits on the lock in PostgreSQL (an ungranted advisory lock), not in this process.
        await vi.waitFor(async () => {
          const { rows } = await adminPool().query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
          expect(rows[0].n).toBeGreaterThanOrEqual(1);
        });
        expect(order).toEqual(['one in']);
        release();
        await Promise.all([first, second]);
        expect(order).toEqual(['one in', 'one out', 'two in']);
        await expect(one.withLock('setup', async () => 'again')).resolves.toBe('again');
      } finally {
        await discard(one, two);
      }
    });

    it('withLock callbacks never overlap, round after round, with their store queries in between', async () => {
      // Through a pooler in transaction mode, a session lock stays on a server connection that
      // other clients then use: callbacks overlapped and later ones hung (docs/scaling.md).
      const [one, two] = await pair();
      try {
        let inside = 0;
        let overlaps = 0;
        const body = (store: PostgresStore) => async () => {
          inside++;
          if (inside > 1) overlaps++;
          await store.listTenants();
          await store.listTenants();
          inside--;
        };
        for (let round = 0; round < 10; round++) {
          await Promise.all([one.withLock('setup', body(one)), two.withLock('setup', body(two)), one.withLock('setup', body(one))]);
        }
        expect(overlaps).toBe(0);
      } finally {
        await discard(one, two);
      }
    });
  });

  describe('PostgreSQL prepared statements', () => {
    it('with preparedStatements, a connection prepares a statement once and runs it again by name', async () => {
      for (const preparedStatements of [true, false]) {
        const pool = new pg.Pool({ connectionString: url, max: 2 });
        const store = createPostgresStore({ pool, schema: freshSchema('prep'), preparedStatements });
        try {
          await store.migrate();
          const token = makeToken();
          expect(await store.createToken(token, T0)).toEqual({ status: 'created' });
          for (let i = 0; i < 6; i++) expect((await store.getToken(TENANT_A, token.id, T0))?.id).toBe(token.id);
          // Both connections, each asked about its own prepared statements.
          const clients = [await pool.connect(), await pool.connect()];
          const prepared = [];
          for (const client of clients) {
            const { rows } = await client.query("SELECT name, statement, generic_plans + custom_plans AS runs FROM pg_prepared_statements WHERE name LIKE 'tokenvault_%'");
            prepared.push(...rows);
            client.release();
          }
          if (!preparedStatements) {
            expect(prepared).toEqual([]);
            continue;
          }
          const reads = prepared.filter((row) => /FROM "tv_prep_[^"]+"\.tokens t\b/.test(row.statement) && /\bt\.id = \$2/.test(row.statement));
          expect(reads.length, JSON.stringify(prepared)).toBeGreaterThan(0);
          // Six reads over at most two connections: one of them ran its prepared read at least three times.
          expect(Math.max(...reads.map((row) => Number(row.runs)))).toBeGreaterThanOrEqual(3);
        } finally {
          await store.close();
          await pool.end();
          await dropSchema(store.schema);
        }
      }
    });
  });

  describe.skipIf(PGBOUNCER_URL === undefined)(
    `PostgreSQL prepared statements through PgBouncer in transaction mode${PGBOUNCER_URL === undefined ? ` (${PGBOUNCER_SKIP_REASON})` : ''}`,
    () => {
      it('a named statement the pooler loses turns naming off; every answer is still right', async () => {
        const pool = new pg.Pool({ connectionString: PGBOUNCER_URL, max: 4 });
        const db = new PgExecutor(pool, { preparedStatements: true });
        try {
          // PgBouncer 1.18 lends each transaction any server connection: a few rounds of concurrent
          // statements reach one that never prepared what the client believes it did.
          let round = 0;
          for (; round < 200 && db.naming; round++) {
            const [sum, [product], text] = await Promise.all([
              db.query('SELECT $1::int + 1 AS v', [round]),
              db.transaction(async (tx) => (await tx.query('SELECT $1::int * 2 AS w', [round])).rows),
              db.query('SELECT $1::text AS t', [`r${round}`]),
            ]);
            expect([sum.rows[0]?.v, product?.w, text.rows[0]?.t]).toEqual([round + 1, round * 2, `r${round}`]);
          }
          expect(db.naming).toBe(false);
          expect((await db.query('SELECT $1::int AS after', [7])).rows).toEqual([{ after: 7 }]);
        } finally {
          await pool.end();
        }
      });
    },
  );

  describe('PostgreSQL lifecycle', () => {
    it('close() ends a pool it created; a pool passed in stays open', async () => {
      const owned = open();
      await owned.migrate();
      await owned.close();
      await expect(owned.getTenant('x')).rejects.toThrow();
      await dropSchema(owned.schema);

      const pool = new pg.Pool({ connectionString: url, max: 2 });
      const shared = createPostgresStore({ pool, schema: freshSchema('shared') });
      try {
        await shared.migrate();
        await shared.createTenant({ id: 't', name: 'T', createdAt: T0 });
        await shared.close();
        expect((await pool.query(`SELECT count(*)::int AS n FROM "${shared.schema}".tenants`)).rows[0].n).toBe(1);
      } finally {
        await pool.end();
        await dropSchema(shared.schema);
      }
    });

    it("leaves pg's process-wide type parsers alone (bigint still parses as a string elsewhere)", async () => {
      const store = open();
      try {
        await store.migrate();
        await store.createTenant({ id: 't', name: 'T', createdAt: T0 });
        expect((await store.getTenant('t'))?.createdAt).toBe(T0);
        const { rows } = await adminPool().query(`SELECT created_at FROM "${store.schema}".tenants`);
        expect(rows[0].created_at).toBe(String(T0));
      } finally {
        await discard(store);
      }
    });
  });

  describe('PostgreSQL storage details', () => {
    const count = async (store: PostgresStore, table: string) => Number((await adminPool().query(`SELECT count(*) AS n FROM "${store.schema}".${table}`)).rows[0].n);

    it('leaves no data behind when a token is deleted or purged: its reference record holds no ciphertext, metadata or lookup keys', async () => {
      const store = open();
      try {
        await store.migrate();
        const deleted = makeToken({ metadata: { a: '1', b: '2' }, searchHashes: ['x', 'y'] });
        const expiring = makeToken({ metadata: { a: '1' }, searchHashes: ['x'], expiresAt: T0 + 1 });
        const kept = makeToken({ metadata: { a: '1' }, searchHashes: ['x'] });
        for (const token of [deleted, expiring, kept]) await store.createToken(token, T0);
        const keys = () => adminPool().query(`SELECT id, length(lookup) AS bytes FROM "${store.schema}".tokens WHERE lookup IS NOT NULL ORDER BY id`);
        expect((await keys()).rows.map((r) => r.bytes).sort()).toEqual([128, 64, 64].sort());
        expect(await store.deleteToken(TENANT_A, deleted.id, APP_A, audit(deleted), T0)).toBe(true);
        expect((await store.purgeExpiredTokens(T0 + 1, 10)).length).toBe(1);
        expect((await keys()).rows).toEqual([{ id: kept.id, bytes: 64 }]);
        const data = await adminPool().query(
          `SELECT count(*)::int AS n FROM "${store.schema}".tokens WHERE deleted_at IS NOT NULL AND num_nulls(ciphertext, fingerprint, mask, containers, metadata, search_indexes, search_hashes, lookup, expires_at, cvc_purge_at) <> 10`,
        );
        expect(data.rows[0].n).toBe(0);
        const refs = await adminPool().query(`SELECT id, deleted_by FROM "${store.schema}".tokens WHERE deleted_at IS NOT NULL ORDER BY id`);
        expect(refs.rows).toEqual(
          [
            { id: deleted.id, deleted_by: APP_A },
            { id: expiring.id, deleted_by: 'system:expiry' },
          ].sort((x, y) => x.id.localeCompare(y.id)),
        );
      } finally {
        await discard(store);
      }
    });

    it('keeps the audit log append-only', async () => {
      const store = open();
      try {
        await store.migrate();
        await store.appendAudit([makeAudit({ resourceId: 'r' })]);
        // Sealing sets an entry's chain columns once and retention removes entries (docs/audit.md); nothing else changes a row.
        for (const [sql, refusal] of [
          ["UPDATE %s.audit_log SET actor = 'x'", /sealed once and never changed/],
          ['UPDATE %s.audit_log SET chain_index = 1', /sealed once and never changed/],
          ['DELETE FROM %s.audit_log', /removed by retention only/],
          ['TRUNCATE %s.audit_log', /append-only/],
        ] as const) {
          await expect(adminPool().query(sql.replace('%s', `"${store.schema}"`))).rejects.toThrow(refusal);
        }
        expect(await count(store, 'audit_log')).toBe(1);
      } finally {
        await discard(store);
      }
    });

    it('compares metadata and reactor names case-insensitively beyond ASCII, and indexes long non-ASCII values', async () => {
      const store = open();
      try {
        await store.migrate();
        const token = makeToken({ metadata: { Straße: 'ÄRGER', long: '€'.repeat(1024) } });
        expect(await store.createToken(token, T0)).toEqual({ status: 'created' });
        const ids = async (metadata: Record<string, string>) => (await store.listTokens(TENANT_A, { metadata }, { mode: 'cursor', size: 5 }, T0)).items.map((t) => t.id);
        expect(await ids({ straße: 'ärger' })).toEqual([token.id]);
        expect(await ids({ LONG: '€'.repeat(1024) })).toEqual([token.id]);
        await store.createFormula(makeFormula({ id: 'f' }));
        await store.createReactor(makeReactor({ formulaId: 'f', name: 'ÉCOLE Reactor' }));
        expect((await store.listReactors(TENANT_A, { name: 'école' }, { mode: 'cursor', size: 5 })).items.map((r) => r.name)).toEqual(['ÉCOLE Reactor']);
      } finally {
        await discard(store);
      }
    });

    it('rejects a NUL character (which PostgreSQL text cannot hold) with ValidationError, writing nothing', async () => {
      const store = open();
      try {
        await store.migrate();
        const token = makeToken({ id: 'nul\u0000id' });
        await expect(store.createToken(token, T0)).rejects.toBeInstanceOf(ValidationError);
        await expect(store.createTenant({ id: 't\u0000', name: 'x', createdAt: T0 })).rejects.toBeInstanceOf(ValidationError);
        expect(await count(store, 'tokens')).toBe(0);
      } finally {
        await discard(store);
      }
    });

    it('rejects bad paging and limits with ValidationError on the field', async () => {
      const store = open();
      try {
        await store.migrate();
        const fieldOf = async (promise: Promise<unknown>) => {
          const error = await promise.then(
            () => null,
            (e: unknown) => e,
          );
          return error instanceof ValidationError ? Object.keys(error.errors) : error;
        };
        expect(await fieldOf(store.listTokens(TENANT_A, {}, { mode: 'cursor', size: 0 }, T0))).toEqual(['size']);
        expect(await fieldOf(store.listTokens(TENANT_A, {}, { mode: 'offset', size: 5, page: 0 }, T0))).toEqual(['page']);
        expect(await fieldOf(store.listAudit(TENANT_A, {}, { mode: 'cursor', size: 5, start: 'bm9wZQ' }))).toEqual(['start']);
        expect(await fieldOf(store.purgeExpiredTokens(T0, -1))).toEqual(['limit']);
        expect(await fieldOf(store.listCvcDue(T0, 0))).toEqual(['limit']);
        expect(await fieldOf(store.listTokensBelowKeyVersion(TENANT_A, 2, 1.5))).toEqual(['limit']);
      } finally {
        await discard(store);
      }
    });
  });

  describe('PostgreSQL query plans (20,000 tokens in 20 tenants, analyzed)', () => {
    const store = open();
    afterAll(() => discard(store));
    const planOf = async (sql: string, params: unknown[]) => {
      const { rows } = await adminPool().query(`EXPLAIN (FORMAT JSON) ${sql}`, params);
      return JSON.stringify(rows[0]['QUERY PLAN']);
    };
    const indexesOf = (plan: string) => [...plan.matchAll(/"Index Name":"([^"]+)"/g)].map((m) => m[1]);

    it('reaches tokens through their indexes, without scanning a table; every index of the token table serves a statement', async () => {
      await store.migrate();
      const s = `"${store.schema}"`;
      // Lookup keys: one unique key per token, and one shared by every tenth token of a tenant.
      await adminPool().query(
        `INSERT INTO ${s}.tenant_keys (tenant_id) SELECT 'tenant-' || i FROM generate_series(0, 19) AS i; ` +
          `INSERT INTO ${s}.tokens (tenant, id, type, ciphertext, key_version, flags, fingerprint, lookup, created_by, created_at, expires_at, cvc_purge_at) ` +
          "SELECT k.key, 'id-' || i, 'type-' || (i % 7), '\\x00', 1, 0, convert_to('fp-' || i, 'UTF8'), " +
          "sha256(convert_to('k' || i, 'UTF8')) || sha256(convert_to('shared' || (i % 10), 'UTF8')), 'x', i, " +
          `CASE WHEN i % 500 = 0 THEN i END, CASE WHEN i % 500 = 1 THEN i END FROM generate_series(1, 20000) AS i JOIN ${s}.tenant_keys k ON k.tenant_id = 'tenant-' || (i % 20); ` +
          `UPDATE ${s}.tokens SET deleted_at = 1, deleted_by = 'x', ciphertext = NULL, fingerprint = NULL, lookup = NULL WHERE id = 'id-4003'; ` +
          `ANALYZE ${s}.tokens; ANALYZE ${s}.tenant_keys`,
      );
      const { tokenStatements, tokenListQuery } = await import('../../src/storage/postgres/token-sql.js');
      const { cursorPageSql } = await import('../../src/storage/postgres/paging.js');
      const { createHash } = await import('node:crypto');
      const sql = tokenStatements(s);
      const { TOKENS_SQL } = await import('../../src/storage/areas/tokens.js');
      const { postgresDialect } = await import('../../src/storage/sql/dialect.js');
      const shared = (name: keyof typeof TOKENS_SQL) => TOKENS_SQL[name].render(postgresDialect(s)).text;
      const tenantKey = (await adminPool().query(`SELECT key FROM ${s}.tenant_keys WHERE tenant_id = 'tenant-3'`)).rows[0].key as number;
      const list = async (filter: object) => {
        const query = tokenListQuery(s, 'tenant-3', filter, 0, tenantKey);
        return planOf(cursorPageSql(query, 0, 20), query.params.values);
      };
      const key = (text: string) => createHash('sha256').update(text).digest().toString('base64url');
      const cases: [string, () => Promise<string>, string][] = [
        ['get by id', () => planOf(sql.getLive, ['tenant-3', 'id-3', 0]), 'tokens_pkey'],
        ['dedupe probe', () => planOf(sql.findLiveDuplicate, ['tenant-3', Buffer.from('fp-3'), 'type-3', 0, null, null]), 'tokens_tenant_fingerprint'],
        [
          'scoped dedupe probe',
          () => planOf(sql.findLiveDuplicate, ['tenant-3', Buffer.from('fp-3'), 'type-3', 0, null, JSON.stringify([['/pci/', []]])]),
          'tokens_tenant_fingerprint',
        ],
        ['cvc due', () => planOf(shared('cvcDue'), [1000, 5]), 'tokens_cvc_purge_at'],
        ['expired', () => planOf(sql.purgeExpired, [1000, 5, 'system:expiry', 'token:delete']), 'tokens_expires_at'],
        ['reference', () => planOf(shared('deleted'), ['tenant-3', 'id-4003']), 'tokens_pkey'],
        ['list by type', () => list({ types: ['type-3'] }), 'tokens_tenant_seq'],
        ['list by fingerprint', () => list({ fingerprints: ['fp-3'] }), 'tokens_tenant_fingerprint'],
        // A search value that is a blind index (43 base64url characters) is its own key (token-rows.ts lookupKeys).
        ['search by a value', () => list({ searchHashes: [key('k3')] }), 'tokens_lookup'],
        ['list by re-encryption', () => planOf(shared('belowKeyVersion'), ['tenant-3', 2, 0, 10]), 'tokens_tenant_seq'],
      ];
      const used = new Set<string>();
      for (const [name, plan, index] of cases) {
        const text = await plan();
        expect(indexesOf(text), name).toContain(index);
        // (tenant_keys, 20 rows on one page, is read whole: cheaper than its index.)
        expect(text, name).not.toMatch(/"Seq Scan"[^}]*"Relation Name":"tokens"/);
        for (const found of indexesOf(text)) used.add(found!);
      }
      const { rows } = await adminPool().query("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'tokens' ORDER BY 1", [store.schema]);
      expect(rows.map((r) => r.indexname).filter((name) => !used.has(name))).toEqual([]);
      // A page of a tenant walks its (tenant, seq) index in seq order: never a scan and sort of the table.
      const page = await list({});
      expect(page).not.toMatch(/"Seq Scan"[^}]*"Relation Name":"tokens"/);
      expect(page).not.toContain('"Node Type":"Sort"');
    });
  });
}
