import * as v from 'valibot';
import { validationFromIssues } from '../../validation/issues.js';

/** Parsers for the result columns of one query: pg's per-query `types` option. */
export interface PgTypeParsers {
  getTypeParser(oid: number, format?: string): (value: string) => unknown;
}

/** The query form the store sends: text, positional values, and its own column parsers. */
export interface PgQueryConfig {
  /** Set: a server-side prepared statement of that name on the connection (pg prepares it on first use). */
  name?: string;
  text: string;
  values?: unknown[];
  types?: PgTypeParsers;
  /** pg's client-side bound on the answer, in ms (the store's backstop: pg-executor.ts). */
  query_timeout?: number;
}

export interface PgQueryResult {
  rows: Record<string, unknown>[];
  rowCount: number | null;
}

/** The slice of a pg `PoolClient` the store calls (ARCHITECTURE.md, Rules of the house: depend on interfaces, by shape). */
export interface PgPoolClient {
  query(config: PgQueryConfig): Promise<PgQueryResult>;
  /** Returns the client to its pool; `true` or an error destroys the connection instead. */
  release(destroy?: boolean | Error): void;
  on?(event: 'error', listener: (error: Error) => void): unknown;
  removeListener?(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * The slice of a pg `Pool` the store calls. Any pg (v8) Pool fits; the store uses `query` for
 * single statements, `connect` for transactions, and `end` only on a pool it created.
 */
export interface PgPool {
  query(config: PgQueryConfig): Promise<PgQueryResult>;
  connect(): Promise<PgPoolClient>;
  end(): Promise<void>;
}

/**
 * Options of `createPostgresStore`. Give `connectionString` or an existing `pool`, not both.
 */
export interface PostgresStoreOptions {
  /**
   * `postgres://user@host:5432/db` (or `postgresql://`). The store creates a pg Pool and ends it on
   * `close()`. A password is better left out of the URL and set in `PGPASSWORD`, which pg reads.
   */
  connectionString?: string;
  /** A pg Pool (or anything of its shape) to use instead. The store never ends it. */
  pool?: PgPool;
  /**
   * The schema holding the store's tables (default `'public'`), created by `migrate()` when missing.
   * Every statement names it explicitly, so the connection's `search_path` does not matter and
   * several vaults (or test runs) can share a database in separate schemas. Lower-case letters,
   * digits and `_`, at most 63 characters, not starting with `pg_`.
   */
  schema?: string;
  /**
   * Size of the pool the store creates (default 10; at least 2, since `withLock` holds one
   * connection while its callback queries through another). Not allowed with `pool`: size yours.
   */
  max?: number;
  /**
   * Name the store's statements, so that each connection parses and plans one once and then only
   * executes it (server-side prepared statements; default true). Measured here: half the
   * database's CPU per token read (docs/scaling.md). Behind a pooler in transaction mode that does
   * not carry them between server connections (PgBouncer before 1.21, or without
   * max_prepared_statements), the first statement it loses makes the store stop naming them, and
   * that work runs again unnamed; `false` never names them (and spares the database log that error).
   */
  preparedStatements?: boolean;
  /**
   * Longest a statement may run, in ms (default 15000; 0: the store sets none, the server's own
   * setting applies). PostgreSQL cancels it (57014) and the call fails with a 503
   * ServiceUnavailableError. Set on each connection and by `SET LOCAL` in each transaction, so it
   * holds through PgBouncer in transaction mode (docs/storage.md, "Timeouts").
   */
  statementTimeoutMs?: number;
  /** Longest wait for a lock (a row or table another transaction holds), in ms (default 3000; 0: none set). 55P03, a 503. */
  lockTimeoutMs?: number;
  /**
   * Longest wait for a connection, in ms: opening one, and waiting for a free one of the pool
   * (default 5000; 0: no bound). Only for a pool the store creates: bound yours with pg's
   * `connectionTimeoutMillis`.
   */
  connectTimeoutMs?: number;
  /** A transaction left idle this long (ms) has its connection ended by the server (default 60000; 0: none set). */
  idleInTransactionTimeoutMs?: number;
  /**
   * Statement and lock timeout of `migrate()`'s transaction and of `withLock` (default 0: no bound,
   * whatever the server's setting): a migration may lock and rewrite a large table, and instances
   * starting together wait for the one migrating.
   */
  migrationTimeoutMs?: number;
}

/** The timeouts, in ms; 0: not set by the store (connectTimeoutMs, migrationTimeoutMs 0: no bound). */
export interface PostgresTimeouts {
  readonly statementTimeoutMs: number;
  readonly lockTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly idleInTransactionTimeoutMs: number;
  readonly migrationTimeoutMs: number;
}

/** Options after validation: frozen, defaults applied. */
export interface ResolvedPostgresStoreOptions {
  readonly connectionString: string | undefined;
  readonly pool: PgPool | undefined;
  readonly schema: string;
  readonly max: number;
  readonly preparedStatements: boolean;
  readonly timeouts: PostgresTimeouts;
}

export const DEFAULT_SCHEMA = 'public';
export const DEFAULT_POOL_SIZE = 10;
/**
 * An OLTP vault's statements take milliseconds; these bounds are for when the database cannot
 * answer (a lock held by a migration or an administrator, an overloaded server), so that a request
 * fails with a 503 the client retries instead of hanging past its own timeout. Why each value:
 * docs/storage.md, "Timeouts".
 */
export const DEFAULT_TIMEOUTS: PostgresTimeouts = Object.freeze({
  statementTimeoutMs: 15_000,
  lockTimeoutMs: 3_000,
  connectTimeoutMs: 5_000,
  idleInTransactionTimeoutMs: 60_000,
  migrationTimeoutMs: 0,
});
/** A day: longer is no bound in practice (and past 2^31 ms, Node's timers fire at once). */
export const MAX_TIMEOUT_MS = 86_400_000;

const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

function isPool(value: unknown): value is PgPool {
  if (typeof value !== 'object' || value === null) return false;
  const pool = value as Record<string, unknown>;
  return ['query', 'connect', 'end'].every((name) => typeof pool[name] === 'function');
}

// Parsed rather than pattern-matched so that what pg will parse is what is accepted; the message
// never repeats the value, which may hold a password.
function isConnectionUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'postgres:' || url.protocol === 'postgresql:';
  } catch {
    return false;
  }
}

const TimeoutSchema = v.pipe(
  v.number('must be a number of milliseconds'),
  v.integer('must be a whole number of milliseconds'),
  v.minValue(0, 'must be 0 (none) or more'),
  v.maxValue(MAX_TIMEOUT_MS, `must be at most ${MAX_TIMEOUT_MS} (a day)`),
);

const OptionsSchema = v.pipe(
  v.strictObject(
    {
      connectionString: v.optional(v.pipe(v.string('must be a string'), v.check(isConnectionUrl, 'must be a postgres:// or postgresql:// URL'))),
      pool: v.optional(v.custom<PgPool>(isPool, 'must be a pg Pool (with query, connect and end)')),
      schema: v.optional(
        v.pipe(
          v.string('must be a string'),
          v.regex(SCHEMA_PATTERN, 'must be a lower-case identifier: letters, digits and _, at most 63 characters'),
          v.check((name) => !name.startsWith('pg_'), 'must not start with pg_ (reserved for system schemas)'),
        ),
      ),
      max: v.optional(
        v.pipe(
          v.number('must be a number'),
          v.integer('must be a whole number of connections'),
          // withLock holds one connection while its callback queries through another.
          v.minValue(2, 'must be at least 2'),
          v.maxValue(1000, 'must be at most 1000'),
        ),
      ),
      preparedStatements: v.optional(v.boolean('must be true or false')),
      statementTimeoutMs: v.optional(TimeoutSchema),
      lockTimeoutMs: v.optional(TimeoutSchema),
      connectTimeoutMs: v.optional(TimeoutSchema),
      idleInTransactionTimeoutMs: v.optional(TimeoutSchema),
      migrationTimeoutMs: v.optional(TimeoutSchema),
    },
    'must be an object',
  ),
  v.forward(
    v.partialCheck([['connectionString'], ['pool']], (input) => input.connectionString !== undefined || input.pool !== undefined, 'give connectionString or pool'),
    ['connectionString'],
  ),
  v.forward(
    v.partialCheck([['connectionString'], ['pool']], (input) => input.connectionString === undefined || input.pool === undefined, 'give either connectionString or pool, not both'),
    ['pool'],
  ),
  v.forward(
    v.partialCheck([['pool'], ['max']], (input) => input.pool === undefined || input.max === undefined, 'applies only to a pool the store creates'),
    ['max'],
  ),
  v.forward(
    v.partialCheck(
      [['pool'], ['connectTimeoutMs']],
      (input) => input.pool === undefined || input.connectTimeoutMs === undefined,
      "applies only to a pool the store creates (set pg's connectionTimeoutMillis on yours)",
    ),
    ['connectTimeoutMs'],
  ),
);

/** Validates the options once, at construction; throws ValidationError keyed by option name. */
export function resolvePostgresStoreOptions(options: PostgresStoreOptions | undefined): ResolvedPostgresStoreOptions {
  const result = v.safeParse(OptionsSchema, options ?? {});
  // Keyed by option name; an issue with the options as a whole under 'options'.
  if (!result.success) throw validationFromIssues(result.issues, '', 'options');
  const { connectionString, pool, schema, max, preparedStatements, ...given } = result.output;
  const timeouts: { -readonly [K in keyof PostgresTimeouts]: number } = { ...DEFAULT_TIMEOUTS };
  for (const [name, value] of Object.entries(given) as [keyof PostgresTimeouts, number | undefined][]) if (value !== undefined) timeouts[name] = value;
  return Object.freeze({
    connectionString,
    pool,
    schema: schema ?? DEFAULT_SCHEMA,
    max: max ?? DEFAULT_POOL_SIZE,
    preparedStatements: preparedStatements ?? true,
    timeouts: Object.freeze(timeouts),
  });
}

/** The schema as a quoted identifier, for SQL text (safe: the name was validated). */
export function quoteSchema(schema: string): string {
  return `"${schema}"`;
}
