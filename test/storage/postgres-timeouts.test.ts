// PostgreSQL waits have a bound. A lock held by another session, a server-side
// statement timeout, an administrator's cancel and a full pool each answer 503 with Retry-After
// (a database condition: one warning, no stack), directly and through PgBouncer in transaction mode.
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/common/logger.js';
import { ServiceUnavailableError } from '../../src/errors/errors.js';
import { createFetchHandler } from '../../src/http/index.js';
import { createPostgresStore, type PgPool, type PostgresStore } from '../../src/postgres.js';
import { runMigrations } from '../../src/storage/postgres/migrations.js';
import { ANSWER_MARGIN_MS, PgExecutor } from '../../src/storage/postgres/pg-executor.js';
import { databaseWait, translateError } from '../../src/storage/postgres/pg-errors.js';
import { DEFAULT_TIMEOUTS, resolvePostgresStoreOptions } from '../../src/storage/postgres/postgres-options.js';
import { StartupFallbackPool, isRefusedStartupParameter } from '../../src/storage/postgres/startup-fallback-pool.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { validationErrorOf } from '../support/field-errors.js';
import { adminPool, dropSchema, freshSchema } from '../support/postgres.js';
import { describeEachPgRoute } from '../support/stores.js';
import { SUITE_START } from '../support/suite-start.js';

const pgError = (code: string, message = `pg error ${code}`) => Object.assign(new Error(message), { code, severity: 'ERROR' });

/** A pool of pg's shape answering from a script; records each statement's text and client-side bound. */
function scriptedPool(answer: (text: string) => unknown) {
  const sent: { text: string; query_timeout?: number }[] = [];
  const released: (boolean | Error | undefined)[] = [];
  const query = async (config: { text: string; query_timeout?: number }) => {
    sent.push({ text: config.text, ...(config.query_timeout === undefined ? {} : { query_timeout: config.query_timeout }) });
    const result = answer(config.text);
    if (result instanceof Error) throw result;
    return { rows: [], rowCount: 0 };
  };
  const pool: PgPool = { query, connect: async () => ({ query, release: (destroy) => void released.push(destroy) }), end: async () => undefined };
  return { pool, sent, released };
}

describe('PostgreSQL timeouts: options, classification, executor', () => {
  const url = 'postgres://vault@127.0.0.1:5432/vault';

  it('defaults: statement 15 s, lock 3 s, connect 5 s, idle in transaction 60 s, migrations unbounded', () => {
    expect(resolvePostgresStoreOptions({ connectionString: url }).timeouts).toEqual({
      statementTimeoutMs: 15_000,
      lockTimeoutMs: 3_000,
      connectTimeoutMs: 5_000,
      idleInTransactionTimeoutMs: 60_000,
      migrationTimeoutMs: 0,
    });
    expect(resolvePostgresStoreOptions({ connectionString: url, lockTimeoutMs: 0, statementTimeoutMs: 200 }).timeouts).toMatchObject({
      lockTimeoutMs: 0,
      statementTimeoutMs: 200,
      connectTimeoutMs: 5_000,
    });
  });

  it('bad timeout values are a ValidationError naming the option', () => {
    for (const option of ['statementTimeoutMs', 'lockTimeoutMs', 'connectTimeoutMs', 'idleInTransactionTimeoutMs', 'migrationTimeoutMs']) {
      for (const bad of [-1, 1.5, '100', null, 86_400_001, Number.NaN]) {
        const error = validationErrorOf(() => createPostgresStore({ connectionString: url, [option]: bad as never }));
        expect(Object.keys(error.errors), `${option}: ${String(bad)}`).toEqual([option]);
      }
    }
    expect(validationErrorOf(() => createPostgresStore({ connectionString: url, lockTimeoutMs: -5 })).errors['lockTimeoutMs']).toEqual(['must be 0 (none) or more']);
    // pg's connectionTimeoutMillis is the owner's to set on a pool passed in.
    const { pool } = scriptedPool(() => ({}));
    expect(Object.keys(validationErrorOf(() => createPostgresStore({ pool, connectTimeoutMs: 100 })).errors)).toEqual(['connectTimeoutMs']);
    expect(() => createPostgresStore({ pool, statementTimeoutMs: 100, lockTimeoutMs: 50 })).not.toThrow();
  });

  it('57014, 55P03 and connect or answer timeouts are 503s naming the wait; a statement timeout is told from a cancel', () => {
    const cases: [unknown, string][] = [
      [pgError('57014', 'canceling statement due to statement timeout'), 'statement_timeout'],
      [pgError('57014', 'canceling statement due to user request'), 'query_canceled'],
      [pgError('55P03', 'canceling statement due to lock timeout'), 'lock_timeout'],
      [pgError('55P03', 'could not obtain lock on row in relation "tokens"'), 'lock_timeout'],
      [new Error('timeout exceeded when trying to connect'), 'connect_timeout'],
      [new Error('Connection terminated due to connection timeout'), 'connect_timeout'],
      [new Error('Query read timeout'), 'answer_timeout'],
    ];
    for (const [error, wait] of cases) {
      expect(databaseWait(error)).toBe(wait);
      const translated = translateError(error);
      expect(translated).toBeInstanceOf(ServiceUnavailableError);
      expect((translated as ServiceUnavailableError).retryAfterSeconds).toBe(1);
      expect((translated as ServiceUnavailableError).cause).toBe(error);
    }
    expect((translateError(cases[0]![0]) as Error).message).toMatch(/statement timeout/);
    expect((translateError(cases[1]![0]) as Error).message).toMatch(/cancelled/);
    expect((translateError(cases[2]![0]) as Error).message).toMatch(/lock timeout/);
    // Other errors are not waits.
    expect(databaseWait(pgError('42P01'))).toBeUndefined();
    expect(databaseWait(new Error('Connection terminated unexpectedly'))).toBeUndefined();
  });

  it('a wait cut short is never run again: not a read, not a transaction', async () => {
    for (const code of ['57014', '55P03']) {
      const { pool, sent } = scriptedPool((text) => (text.startsWith('SELECT') ? pgError(code) : {}));
      const db = new PgExecutor(pool, { timeouts: DEFAULT_TIMEOUTS });
      await expect(db.query('SELECT 1')).rejects.toBeInstanceOf(ServiceUnavailableError);
      expect(sent.map((s) => s.text)).toEqual(['SELECT 1']);
      let runs = 0;
      const failing = db.transaction(async (tx) => {
        runs++;
        await tx.query('SELECT 2');
      });
      await expect(failing).rejects.toBeInstanceOf(ServiceUnavailableError);
      expect(runs).toBe(1);
    }
    // A connect timeout (a full pool) is not retried either: it would wait as long again.
    let connects = 0;
    const full: PgPool = {
      query: async () => Promise.reject(new Error('timeout exceeded when trying to connect')),
      connect: async () => (connects++, Promise.reject(new Error('timeout exceeded when trying to connect'))),
      end: async () => undefined,
    };
    const db = new PgExecutor(full, { timeouts: DEFAULT_TIMEOUTS });
    await expect(db.transaction(async () => undefined)).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(connects).toBe(1);
  });

  it('transactions carry the bounds as SET LOCAL in their BEGIN (one round trip); statements carry the backstop', async () => {
    const { pool, sent } = scriptedPool(() => ({}));
    const db = new PgExecutor(pool, { timeouts: { ...DEFAULT_TIMEOUTS, statementTimeoutMs: 2_000, lockTimeoutMs: 0 } });
    await db.transaction(async (tx) => void (await tx.query('UPDATE x SET a = $1', [1])));
    expect(sent).toEqual([
      {
        text: 'BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL statement_timeout = 2000; SET LOCAL idle_in_transaction_session_timeout = 60000',
        query_timeout: 2_000 + ANSWER_MARGIN_MS,
      },
      { text: 'UPDATE x SET a = $1', query_timeout: 2_000 + ANSWER_MARGIN_MS },
      { text: 'COMMIT', query_timeout: 2_000 + ANSWER_MARGIN_MS },
    ]);
    sent.length = 0;
    await db.query('SELECT $1::int', [1]);
    expect(sent).toEqual([{ text: 'SELECT $1::int', query_timeout: 2_000 + ANSWER_MARGIN_MS }]);
  });

  it('migrations run with their own bound (none by default, whatever the server default), withLock with no idle bound', async () => {
    const { pool, sent } = scriptedPool(() => ({}));
    const db = new PgExecutor(pool, { timeouts: DEFAULT_TIMEOUTS });
    await runMigrations(db, 'mig', ['SELECT 1']);
    const begin = sent.find((s) => s.text.startsWith('BEGIN'))!;
    expect(begin).toEqual({ text: 'BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0' });
    sent.length = 0;
    await db.holding(
      async (tx) => void (await tx.query('SELECT pg_advisory_xact_lock($1)', [1])),
      async () => undefined,
    );
    expect(sent[0]).toEqual({ text: 'BEGIN; SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = 0' });
    const bounded = scriptedPool(() => ({}));
    await runMigrations(new PgExecutor(bounded.pool, { timeouts: { ...DEFAULT_TIMEOUTS, migrationTimeoutMs: 600_000 } }), 'mig', ['SELECT 1']);
    expect(bounded.sent.find((s) => s.text.startsWith('BEGIN'))).toEqual({
      text: 'BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL statement_timeout = 600000; SET LOCAL lock_timeout = 600000',
      query_timeout: 600_000 + ANSWER_MARGIN_MS,
    });
  });

  it('a statement past the backstop inside a transaction: the connection is dropped, not rolled back behind it; not retried', async () => {
    const { pool, sent, released } = scriptedPool((text) => (text === 'UPDATE x' ? new Error('Query read timeout') : {}));
    const db = new PgExecutor(pool, { timeouts: DEFAULT_TIMEOUTS });
    let runs = 0;
    await expect(db.transaction(async (tx) => (runs++, void (await tx.query('UPDATE x'))))).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(runs).toBe(1);
    expect(sent.map((s) => s.text)).not.toContain('ROLLBACK');
    expect(released).toEqual([true]);
  });

  it("recognizes PgBouncer's refusal of a startup parameter", () => {
    expect(isRefusedStartupParameter(pgError('08P01', 'unsupported startup parameter: statement_timeout'))).toBe(true);
    expect(isRefusedStartupParameter(pgError('08P01', 'protocol violation'))).toBe(false);
  });
});

/** A Logger that keeps what it is given. */
function capturingLogger() {
  const entries: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at =
    (level: string) =>
    (message: string, fields: Record<string, unknown> = {}) =>
      void entries.push({ level, message, fields });
  const logger: Logger = { info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, entries };
}

// Directly and through PgBouncer 1.18 in transaction mode (docs/scaling.md), when one is set.
describeEachPgRoute('PostgreSQL waits are bounded', (url, route) => {
  const schemas: string[] = [];
  const opened: TestVault[] = [];
  const holders: pg.PoolClient[] = [];
  afterEach(async () => {
    // A read the store gave up on (its backstop, through PgBouncer) still waits on the server for
    // the holder's lock. Released, it would run while the schema is dropped and could deadlock
    // with the DROP: cancel each such wait first, until none is left.
    for (const schema of schemas) {
      for (;;) {
        const { rows } = await adminPool().query(
          `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1 AND pid <> pg_backend_pid()`,
          [`%"${schema}".%`],
        );
        if (rows.length === 0) break;
      }
    }
    for (const holder of holders.splice(0)) {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
    for (const vault of opened.splice(0)) await vault.close();
    for (const schema of schemas.splice(0)) await dropSchema(schema);
  });

  const open = async (options: Parameters<typeof createPostgresStore>[0]) => {
    const schema = freshSchema('wait');
    schemas.push(schema);
    const store = createPostgresStore({ connectionString: url, schema, preparedStatements: route === 'postgres', ...options });
    const { logger, entries } = capturingLogger();
    const vault = await createTestVault({ start: SUITE_START, store, logger });
    opened.push(vault);
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const handler = createFetchHandler(vault, { logger });
    const send = (method: string, path: string, body?: unknown) =>
      handler(
        new Request(`http://vault.test${path}`, {
          method,
          headers: { 'svc-api-key': app.key, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      );
    return { vault, store: store as PostgresStore, schema, app, send, entries };
  };

  /** Another session (directly on the server) takes the table and keeps it until the test ends. */
  const lockTokens = async (schema: string) => {
    const holder = await adminPool().connect();
    holders.push(holder);
    await holder.query(`BEGIN; LOCK TABLE "${schema}".tokens IN ACCESS EXCLUSIVE MODE`);
  };

  const expect503 = async (response: Response, detail: RegExp) => {
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    const problem = (await response.json()) as { type: string; detail: string };
    expect(problem.type).toBe('urn:tokenvault:problem:service-unavailable');
    expect(problem.detail).toMatch(detail);
  };

  /** Every 503 was one warning line without a stack; nothing was logged as an error (a bug). */
  const expectLoggedAsCondition = (entries: ReturnType<typeof capturingLogger>['entries'], count: number) => {
    expect(entries.filter((e) => e.level === 'error')).toEqual([]);
    const warnings = entries.filter((e) => e.message === 'request answered 503: service unavailable');
    expect(warnings).toHaveLength(count);
    for (const warning of warnings) {
      expect(warning.level).toBe('warn');
      expect(warning.fields).not.toHaveProperty('stack');
      expect(warning.fields['error']).toBe('service_unavailable');
    }
  };

  // Directly, the lock timeout ends the wait (55P03); through PgBouncer, a lone read has no session
  // default there and the store's backstop ends it, and a transaction's SET LOCAL still applies.
  const WAITED = route === 'postgres' ? /lock timeout/ : /lock timeout|did not answer in time/;

  it('a table locked by another session: reads and writes answer 503 with Retry-After, then work once it is released', async () => {
    const { store, schema, send, entries, vault, app } = await open({ lockTimeoutMs: 200, statementTimeoutMs: 1_000 });
    const created = (await (await send('POST', '/tokens', { type: 'token', data: 'kept', deduplicate_token: false })).json()) as { id: string };
    await lockTokens(schema);
    await expect503(await send('GET', `/tokens/${created.id}`), WAITED);
    await expect503(await send('POST', '/tokens', { type: 'token', data: 'second', deduplicate_token: false }), WAITED);
    // Deduplication takes its advisory lock, then the table, in one transaction: bounded there too.
    await expect503(await send('POST', '/tokens', { type: 'token', data: 'third', deduplicate_token: true }), /lock timeout/);
    const inProcess = await vault.tokens.get(app, created.id).catch((error: unknown) => error);
    expect(inProcess).toBeInstanceOf(ServiceUnavailableError);
    expectLoggedAsCondition(entries, 3);
    // PgBouncer 1.18 refuses the timeouts as startup parameters: the store dropped them (and said nothing).
    expect((store.pool as StartupFallbackPool).startupParameters).toBe(route === 'postgres');
    const holder = holders.pop()!;
    await holder.query('ROLLBACK');
    holder.release();
    expect((await send('GET', `/tokens/${created.id}`)).status).toBe(200);
    expect((await send('POST', '/tokens', { type: 'token', data: 'after', deduplicate_token: false })).status).toBe(201);
  });

  it("the server's statement timeout (57014) is a 503, not a 500, logged without a stack", async () => {
    // No lock timeout: the statement waits on the lock until its statement timeout cancels it. The
    // timeout bounds the setup's statements too: a second leaves a loaded machine time for them.
    const { schema, send, entries } = await open({ lockTimeoutMs: 0, statementTimeoutMs: 1_000 });
    const created = (await (await send('POST', '/tokens', { type: 'token', data: 'kept', deduplicate_token: false })).json()) as { id: string };
    await lockTokens(schema);
    await expect503(await send('POST', '/tokens', { type: 'token', data: 'deduplicated', deduplicate_token: true }), /statement timeout/);
    await expect503(await send('GET', `/tokens/${created.id}`), route === 'postgres' ? /statement timeout/ : /statement timeout|did not answer in time/);
    expectLoggedAsCondition(entries, 2);
  });

  it("an administrator's pg_cancel_backend is a 503 too, told apart from a timeout", async () => {
    const { schema, send, entries } = await open({ lockTimeoutMs: 0, statementTimeoutMs: 0 });
    const created = (await (await send('POST', '/tokens', { type: 'token', data: 'kept', deduplicate_token: false })).json()) as { id: string };
    await lockTokens(schema);
    const answer = send('GET', `/tokens/${created.id}`);
    // Wait for the event: the read's backend waiting on the lock, then cancel it.
    for (;;) {
      const { rows } = await adminPool().query(
        `SELECT pg_cancel_backend(pid) AS cancelled FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1 AND pid <> pg_backend_pid()`,
        [`%"${schema}".tokens%`],
      );
      if (rows.some((row) => row['cancelled'] === true)) break;
    }
    await expect503(await answer, /cancelled/);
    expectLoggedAsCondition(entries, 1);
  });

  it('a pool with no free connection: the request waits at most connectTimeoutMs, then 503', async () => {
    // The bound also covers opening a connection (the migration's, the two held below): a second
    // leaves a loaded machine time to open them, where 200 ms once timed out the migration itself.
    const { store, send, entries } = await open({ max: 2, connectTimeoutMs: 1_000 });
    const taken = [await store.pool.connect(), await store.pool.connect()];
    try {
      await expect503(await send('POST', '/tokens', { type: 'token', data: 'waits' }), /connect timeout/);
      expectLoggedAsCondition(entries, 1);
    } finally {
      for (const client of taken) client.release();
    }
    expect((await send('POST', '/tokens', { type: 'token', data: 'then', deduplicate_token: false })).status).toBe(201);
  });
});

describe('the store-created pool drops refused startup parameters once', () => {
  it('runs the work again without them, and only for that refusal', async () => {
    const made: boolean[] = [];
    const refusal = pgError('08P01', 'unsupported startup parameter: statement_timeout');
    const fake = (startup: boolean) => {
      made.push(startup);
      return {
        query: async () => (startup ? Promise.reject(refusal) : { rows: [{ ok: 1 }], rowCount: 1 }),
        connect: async () => (startup ? Promise.reject(refusal) : { query: async () => ({ rows: [], rowCount: 0 }), release: () => undefined }),
        end: async () => undefined,
      } as unknown as pg.Pool;
    };
    const pool = new StartupFallbackPool(fake, true);
    const answers = await Promise.all([pool.query({ text: 'SELECT 1' }), pool.query({ text: 'SELECT 1' }), pool.connect()]);
    expect(answers[0].rows).toEqual([{ ok: 1 }]);
    expect(made).toEqual([true, false]);
    expect(pool.startupParameters).toBe(false);
    await pool.end();
  });
});
