/** Which database a command works on (SQLite file or PostgreSQL), opened with plain error messages. */
import { createPostgresStore, redactConnectionString } from '../postgres.js';
import { createSqliteStore } from '../sqlite.js';
import { ServiceUnavailableError, VaultError } from '../errors/errors.js';
import type { Store } from '../storage/store.js';
import { MAX_TIMEOUT_MS, type PostgresStoreOptions } from '../storage/postgres/postgres-options.js';
import { CliError, UsageError, integerFlag } from './io.js';

/** Where the vault's data lives: an SQLite file (or :memory:), or a PostgreSQL database and schema. */
export type StoreTarget =
  /** exclusive: the process holds the file alone while it runs (serve, unless --shared-db). */
  | { kind: 'sqlite'; db: string; synchronous: 'full' | 'normal'; exclusive: boolean }
  /** preparedStatements: --postgres-prepared-statements (docs/scaling.md); timeouts: the --postgres-*-timeout-ms given. */
  | { kind: 'postgres'; url: string; schema: string | undefined; preparedStatements: boolean; timeouts: PostgresTimeoutOptions };

type PostgresTimeoutOptions = Pick<PostgresStoreOptions, 'statementTimeoutMs' | 'lockTimeoutMs' | 'connectTimeoutMs' | 'idleInTransactionTimeoutMs' | 'migrationTimeoutMs'>;

/** Each timeout flag and the store option it sets (docs/storage.md, "Timeouts"). */
const TIMEOUT_FLAGS = {
  'postgres-statement-timeout-ms': 'statementTimeoutMs',
  'postgres-lock-timeout-ms': 'lockTimeoutMs',
  'postgres-connect-timeout-ms': 'connectTimeoutMs',
  'postgres-idle-in-transaction-timeout-ms': 'idleInTransactionTimeoutMs',
  'postgres-migration-timeout-ms': 'migrationTimeoutMs',
} as const satisfies Record<string, keyof PostgresTimeoutOptions>;

/** The help lines of the timeout flags, shared by every command's usage text. */
export const TIMEOUT_HELP = `  --postgres-statement-timeout-ms <n>
                             Longest a statement may run before PostgreSQL cancels it and the
                             request answers 503 (default 15000; 0 leaves it to the server)
  --postgres-lock-timeout-ms <n>
                             Longest wait for a lock another transaction holds (default 3000)
  --postgres-connect-timeout-ms <n>
                             Longest wait to open a connection or get a free one (default 5000)
  --postgres-idle-in-transaction-timeout-ms <n>
                             A transaction left idle this long is ended (default 60000)
  --postgres-migration-timeout-ms <n>
                             Statement and lock timeout of migrations (default 0: no bound)
`;

/** The store flags every command takes. Defaults are applied by storeTarget, which must see what was given. */
export const STORE_OPTIONS = {
  db: { type: 'string' },
  postgres: { type: 'string' },
  'postgres-schema': { type: 'string' },
  'postgres-prepared-statements': { type: 'string' },
  'postgres-statement-timeout-ms': { type: 'string' },
  'postgres-lock-timeout-ms': { type: 'string' },
  'postgres-connect-timeout-ms': { type: 'string' },
  'postgres-idle-in-transaction-timeout-ms': { type: 'string' },
  'postgres-migration-timeout-ms': { type: 'string' },
} as const;

/** The target the flags name (SQLite ./tokenvault.db by default). */
export function storeTarget(
  values: {
    db?: string;
    postgres?: string;
    'postgres-schema'?: string;
    'postgres-prepared-statements'?: string;
    synchronous?: string;
  } & { [flag in keyof typeof TIMEOUT_FLAGS]?: string },
): StoreTarget {
  const prepared = values['postgres-prepared-statements'];
  const timeouts: { -readonly [K in keyof PostgresTimeoutOptions]: number } = {};
  for (const [flag, option] of Object.entries(TIMEOUT_FLAGS) as [keyof typeof TIMEOUT_FLAGS, keyof PostgresTimeoutOptions][]) {
    const given = values[flag];
    if (given === undefined) continue;
    if (values.postgres === undefined) throw new UsageError(`--${flag} needs --postgres`);
    timeouts[option] = integerFlag(flag, given, 0, MAX_TIMEOUT_MS);
  }
  if (values.postgres !== undefined) {
    if (values.db !== undefined) throw new UsageError('--db and --postgres cannot be combined: choose SQLite (--db) or PostgreSQL (--postgres)');
    if (values.synchronous !== undefined) throw new UsageError('--synchronous applies to SQLite (--db) only');
    if (prepared !== undefined && prepared !== 'on' && prepared !== 'off') throw new UsageError("--postgres-prepared-statements must be 'on' or 'off'");
    return { kind: 'postgres', url: values.postgres, schema: values['postgres-schema'], preparedStatements: prepared !== 'off', timeouts };
  }
  if (values['postgres-schema'] !== undefined) throw new UsageError('--postgres-schema needs --postgres');
  if (prepared !== undefined) throw new UsageError('--postgres-prepared-statements needs --postgres');
  const synchronous = values.synchronous ?? 'full';
  if (synchronous !== 'full' && synchronous !== 'normal') throw new UsageError("--synchronous must be 'full' or 'normal'");
  return { kind: 'sqlite', db: values.db ?? './tokenvault.db', synchronous, exclusive: false };
}

/** For messages: the file, or the PostgreSQL URL without its password. */
export function describeTarget(target: StoreTarget): string {
  if (target.kind === 'sqlite') return target.db;
  return `${redactConnectionString(target.url)}${target.schema === undefined ? '' : ` (schema ${target.schema})`}`;
}

/** Opens the store (not yet migrated). */
export function openStore(target: StoreTarget): Store {
  try {
    if (target.kind === 'sqlite') return createSqliteStore({ filename: target.db, synchronous: target.synchronous, exclusive: target.exclusive });
    return createPostgresStore({
      connectionString: target.url,
      preparedStatements: target.preparedStatements,
      ...target.timeouts,
      ...(target.schema === undefined ? {} : { schema: target.schema }),
    });
  } catch (error) {
    throw storeError(error, target);
  }
}

/** A database that cannot be opened, said plainly, and never with a password. */
export function storeError(thrown: unknown, target: StoreTarget): unknown {
  // The stores report a busy or unreachable database as a 503; the CLI names the driver's cause.
  const error = thrown instanceof ServiceUnavailableError && thrown.cause !== undefined ? thrown.cause : thrown;
  if (error instanceof VaultError || error instanceof CliError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (target.kind === 'sqlite') {
    if (code === 'SQLITE_BUSY') {
      return new CliError(
        `cannot open the database ${target.db}: another process holds it (a running 'tokenvault serve' keeps its database to itself unless started with --shared-db)`,
      );
    }
    return typeof code === 'string' && code.startsWith('SQLITE_') ? new CliError(`cannot open the database ${target.db} (${code})`) : error;
  }
  // PostgreSQL's own errors (they carry a severity) name the cause without quoting secrets; for
  // anything else (a refused or reset connection) only the code is shown.
  const fromServer = typeof (error as { severity?: unknown }).severity === 'string';
  const cause = fromServer ? `${(error as Error).message} (${String(code)})` : typeof code === 'string' ? code : ((error as Error)?.name ?? 'error');
  return new CliError(`cannot use the PostgreSQL database ${describeTarget(target)}: ${cause}`);
}
