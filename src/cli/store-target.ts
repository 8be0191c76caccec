/** Which database a command works on (SQLite file or PostgreSQL), opened with plain error messages. */
import { createPostgresStore, redactConnectionString } from '../postgres.js';
import { createSqliteStore } from '../sqlite.js';
import { ServiceUnavailableError, VaultError } from '../errors/errors.js';
import type { Store } from '../storage/store.js';
import { CliError, UsageError } from './io.js';

/** Where the vault's data lives: an SQLite file (or :memory:), or a PostgreSQL database and schema. */
export type StoreTarget =
  /** exclusive: the process holds the file alone while it runs (serve, unless --shared-db). */
  | { kind: 'sqlite'; db: string; synchronous: 'full' | 'normal'; exclusive: boolean }
  /** preparedStatements: --postgres-prepared-statements (docs/scaling.md). */
  | { kind: 'postgres'; url: string; schema: string | undefined; preparedStatements: boolean };

/** The store flags every command takes. Defaults are applied by storeTarget, which must see what was given. */
export const STORE_OPTIONS = {
  db: { type: 'string' },
  postgres: { type: 'string' },
  'postgres-schema': { type: 'string' },
  'postgres-prepared-statements': { type: 'string' },
} as const;

/** The target the flags name (SQLite ./tokenvault.db by default). */
export function storeTarget(values: {
  db?: string;
  postgres?: string;
  'postgres-schema'?: string;
  'postgres-prepared-statements'?: string;
  synchronous?: string;
}): StoreTarget {
  const prepared = values['postgres-prepared-statements'];
  if (values.postgres !== undefined) {
    if (values.db !== undefined) throw new UsageError('--db and --postgres cannot be combined: choose SQLite (--db) or PostgreSQL (--postgres)');
    if (values.synchronous !== undefined) throw new UsageError('--synchronous applies to SQLite (--db) only');
    if (prepared !== undefined && prepared !== 'on' && prepared !== 'off') throw new UsageError("--postgres-prepared-statements must be 'on' or 'off'");
    return { kind: 'postgres', url: values.postgres, schema: values['postgres-schema'], preparedStatements: prepared !== 'off' };
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
  const cause = fromServer ? `${(error as Error).message} (${String(code)})` : typeof code === 'string' ? code : (error as Error)?.name ?? 'error';
  return new CliError(`cannot use the PostgreSQL database ${describeTarget(target)}: ${cause}`);
}
