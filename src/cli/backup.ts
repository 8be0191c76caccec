/**
 * `tokenvault backup <dest>`, `tokenvault restore <backup>`, `tokenvault verify` (docs/backups.md).
 * SQLite: an online copy through SQLite's backup API (a consistent snapshot, WAL included, while a
 * server started with --shared-db keeps writing). PostgreSQL: pg_dump of the schema (custom format),
 * restored with pg_restore. The master key is never in a backup: it travels separately.
 */
import { execFile } from 'node:child_process';
import { chmodSync, closeSync, existsSync, openSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { silentLogger } from '../common/logger.js';
import { redactConnectionString } from '../postgres.js';
import { CliError, type CliIo, UsageError, integerFlag, parse } from './io.js';
import { openOperatorAt } from './open-operator.js';
import { STORE_OPTIONS, describeTarget, storeTarget } from './store-target.js';

export const BACKUP_HELP = `Usage: tokenvault backup <dest> [--db <file> | --postgres <url> [--postgres-schema <name>]]
       tokenvault restore <backup> [--db <file> | --postgres <url>]
       tokenvault verify [--db <file> | --postgres <url> [--postgres-schema <name>]] [--sample <n>] [--json]

  backup   SQLite: an online, consistent copy of the database file (WAL included), also while
           'tokenvault serve --shared-db' writes to it. PostgreSQL: pg_dump --format=custom of the
           schema (pg_dump must be on PATH). The master key is NOT in the backup: keep it (or the HSM)
           somewhere else, never beside the backup.
  restore  SQLite: the backup becomes --db (which must not exist). PostgreSQL: pg_restore into the
           database, whose schema must not exist yet.
  verify   Opens the store with its master key (TOKENVAULT_MASTER_KEY, --master-key-file or <db>.key)
           and, per tenant, counts the tokens and decrypts a sample of them (--sample, default 100).

Reference: docs/backups.md
`;

const MASTER_KEY_REMINDER =
  'The master key is not in the backup: without it nothing in it can be read. Keep the key (TOKENVAULT_MASTER_KEY, the <db>.key file, or the HSM) in another place than the backup, never beside it.\n';

/** The store flags, and verify's own (--sample, --json; refused by the others). */
function parseCommand(args: readonly string[], command: 'backup' | 'restore' | 'verify') {
  const parsed = parse(() =>
    parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: true,
      options: {
        ...STORE_OPTIONS,
        'master-key-file': { type: 'string' },
        sample: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }),
  );
  if (command !== 'verify' && (parsed.values.sample !== undefined || parsed.values.json !== undefined))
    throw new UsageError(`--sample and --json are options of verify, not ${command}`);
  return parsed;
}

export async function backup(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(args, 'backup');
  if (values.help) return help(io);
  if (positionals.length !== 1) throw new UsageError('backup takes one destination: tokenvault backup <dest>');
  const dest = positionals[0]!;
  if (existsSync(dest)) throw new CliError(`${dest} exists: a backup never replaces a file; choose a new name`);
  const target = storeTarget(values);
  if (target.kind === 'sqlite') {
    if (target.db === ':memory:' || !existsSync(target.db)) throw new CliError(`no database at ${target.db}`);
    let source: Database.Database;
    try {
      source = new Database(target.db, { readonly: true, fileMustExist: true, timeout: 1000 });
      // A server holding the file exclusively (serve without --shared-db) shows here as busy.
      source.prepare('SELECT count(*) FROM sqlite_master').get();
    } catch (error) {
      throw new CliError(
        `cannot open ${target.db} (${(error as { code?: string }).code ?? 'error'}): a running 'tokenvault serve' holds it alone unless started with --shared-db; start it so, or stop it, to back up`,
      );
    }
    const partial = `${dest}.partial-${process.pid}`;
    try {
      await source.backup(partial);
      // A backup holds what the database holds (wrapped keys, ciphertexts, key hashes): its owner's alone.
      chmodSync(partial, 0o600);
      renameSync(partial, dest);
    } catch (error) {
      rmSync(partial, { force: true });
      throw new CliError(`the backup of ${target.db} to ${dest} failed (${(error as { code?: string }).code ?? (error as Error).message})`);
    } finally {
      source.close();
    }
    io.stdout(`wrote ${dest}: an online SQLite backup of ${target.db} (${statSync(dest).size} bytes, a consistent snapshot with the WAL's commits)\n${MASTER_KEY_REMINDER}`);
    return 0;
  }
  const schema = target.schema ?? 'public';
  // Created first, owner-only: pg_dump writes into the file it finds, keeping its mode.
  closeSync(openSync(dest, 'wx', 0o600));
  try {
    await run(io, 'pg_dump', ['--format=custom', '--no-owner', `--schema=${schema}`, `--file=${dest}`], target.url);
  } catch (error) {
    rmSync(dest, { force: true });
    throw error;
  }
  io.stdout(`wrote ${dest}: pg_dump (custom format) of schema ${schema} of ${redactConnectionString(target.url)} (${statSync(dest).size} bytes)\n${MASTER_KEY_REMINDER}`);
  return 0;
}

export async function restore(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(args, 'restore');
  if (values.help) return help(io);
  if (positionals.length !== 1) throw new UsageError('restore takes one backup: tokenvault restore <backup> --db <file>');
  const from = positionals[0]!;
  if (!existsSync(from)) throw new CliError(`no backup at ${from}`);
  const target = storeTarget(values);
  if (target.kind === 'sqlite') {
    if (target.db === ':memory:') throw new UsageError('restore needs a database file (--db)');
    if (existsSync(target.db)) throw new CliError(`${target.db} exists: restore writes a new database; move the old one aside first`);
    for (const leftover of [`${target.db}-wal`, `${target.db}-shm`]) {
      if (existsSync(leftover)) throw new CliError(`${leftover} is left from another database: move it aside first`);
    }
    // Through the backup API again: the copy is checked as it is read, and lands whole or not at all.
    const source = new Database(from, { readonly: true, fileMustExist: true });
    const partial = `${target.db}.partial-${process.pid}`;
    try {
      await source.backup(partial);
      chmodSync(partial, 0o600);
      renameSync(partial, target.db);
    } catch (error) {
      rmSync(partial, { force: true });
      throw new CliError(`${from} is not an SQLite database backup (${(error as { code?: string }).code ?? 'error'})`);
    } finally {
      source.close();
    }
    io.stdout(`restored ${from} to ${target.db}; put its master key back (TOKENVAULT_MASTER_KEY or ${target.db}.key), then run tokenvault verify --db ${target.db}\n`);
    return 0;
  }
  await run(io, 'pg_restore', ['--exit-on-error', '--no-owner', from], target.url);
  io.stdout(`restored ${from} into ${redactConnectionString(target.url)}; then run tokenvault verify with its TOKENVAULT_MASTER_KEY\n`);
  return 0;
}

export async function verify(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(args, 'verify');
  if (values.help) return help(io);
  if (positionals.length > 0) throw new UsageError(`verify takes no arguments (got '${positionals[0]}')`);
  const sample = values.sample === undefined ? 100 : integerFlag('sample', values.sample, 0, 100_000);
  const target = storeTarget(values);
  if (target.kind === 'sqlite' && (target.db === ':memory:' || !existsSync(target.db))) throw new CliError(`no database at ${target.db}`);
  const keyed = values['master-key-file'] === undefined ? io : withKeyFile(io, values['master-key-file']);
  // openOperatorAt fails when the key does not match the database; it never creates a key here.
  const operator = await openOperatorAt(target, keyed, silentLogger, {}, false);
  try {
    const tenants = [];
    for (const tenant of await operator.listTenants()) {
      const { tokens, sampled } = await operator.keys.check(tenant.id, sample);
      tenants.push({ id: tenant.id, name: tenant.name, tokens, sampled: sampled.length, sampledIds: sampled });
    }
    if (values.json) io.stdout(`${JSON.stringify({ store: describeTarget(target), tenants })}\n`);
    else {
      const lines = tenants.map((t) => `  tenant ${t.id} (${t.name}): ${t.tokens} tokens; ${t.sampled} decrypted with the master key\n`);
      io.stdout(`${describeTarget(target)}: the master key opens it; ${tenants.length} tenant(s)\n${lines.join('')}`);
    }
    return 0;
  } finally {
    await operator.close();
  }
}

function withKeyFile(io: CliIo, file: string): CliIo {
  let key: string;
  try {
    key = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new CliError(`--master-key-file: cannot read ${file} (${(error as { code?: string }).code ?? 'error'})`);
  }
  return { ...io, env: { ...io.env, TOKENVAULT_MASTER_KEY: key } };
}

function help(io: CliIo): number {
  io.stdout(BACKUP_HELP);
  return 0;
}

/** Runs pg_dump or pg_restore; a missing binary or a failure is a CliError with its first error line (never the URL's password). */
/**
 * Runs a PostgreSQL client tool on `url`. The password leaves the URL for PGPASSWORD (a command line
 * is readable by every local user in the process list), and the tool gets only the environment
 * libpq and the system need: not the master key, the PKCS#11 PIN or anything else of ours.
 */
function run(io: CliIo, command: string, args: string[], url: string): Promise<void> {
  const from: Record<string, string | undefined> = { ...process.env, ...io.env };
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(from)) if (value !== undefined && /^(PATH|HOME|USER|LANG|LC_[A-Z]+|TZ|TMPDIR|PG[A-Z_]+)$/.test(name)) env[name] = value;
  const parsed = new URL(url);
  if (parsed.password !== '') {
    env['PGPASSWORD'] = decodeURIComponent(parsed.password);
    parsed.password = '';
  }
  return new Promise((resolve, reject) => {
    execFile(command, [...args, `--dbname=${parsed.href}`], { env }, (error, _stdout, stderr) => {
      if (!error) return resolve();
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        return reject(new CliError(`${command} is not on PATH: install the PostgreSQL client tools of the server's version (docs/backups.md)`));
      }
      const line =
        String(stderr)
          .split('\n')
          .find((l) => l.includes('error')) ??
        String(stderr).split('\n')[0] ??
        '';
      reject(new CliError(`${command} failed: ${line.replace(/postgres(ql)?:\/\/[^\s"]*/g, (url) => redactConnectionString(url))}`));
    });
  });
}
