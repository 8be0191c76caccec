#!/usr/bin/env node
/**
 * The `tokenvault` command: `serve` runs the HTTP API on embedded SQLite or on PostgreSQL; `keys
 * rotate` and `migrate` maintain a database. This is the only module that reads environment
 * variables (the pg driver also reads the standard PG* ones, e.g. PGPASSWORD).
 */
import { chmodSync, existsSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import { dirname, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { MIN_KEY_LENGTH } from './applications/api-keys.js';
import { decodeMasterKey, generateMasterKey } from './crypto/key-provider.js';
import { UnavailableError, VaultError } from './errors.js';
import { createFetchHandler } from './http/index.js';
import { toNodeListener } from './http/node.js';
import { type Logger, consoleLogger } from './logger.js';
import { createPostgresStore, redactConnectionString } from './postgres.js';
import { createSqliteStore } from './sqlite.js';
import { PostgresStore } from './storage/postgres/postgres-store.js';
import type { Store } from './storage/store.js';
import { type Vault, type VaultOptions, createVault } from './vault.js';

/** Where the CLI reads and writes: injectable so it can be run in-process by tests. */
export interface CliIo {
  env: Readonly<Record<string, string | undefined>>;
  stdout(text: string): void;
  stderr(text: string): void;
  /** `serve` stops (draining requests, closing the store) when this aborts. */
  signal?: AbortSignal;
  /** Receives the running server's URL once it listens. */
  onListening?(url: string): void;
}

/** A bad invocation: printed with a hint to `--help`, exit code 2. */
class UsageError extends Error {}
/** A failure the user can act on (bad environment, missing key file): printed as is, exit code 1. */
class CliError extends Error {}

const MAIN_HELP = `Usage: tokenvault <command> [options]

Commands:
  serve          Run the HTTP API on an embedded SQLite database or on PostgreSQL
  keys rotate    Make a new data key for each tenant (or one) and re-encrypt its tokens
  migrate        Apply pending database migrations

Run 'tokenvault <command> --help' for a command's options.
`;

const SERVE_HELP = `Usage: tokenvault serve [options]

Options:
  --port <n>                 Port to listen on; 0 picks a free one (default 8080)
  --host <addr>              Address to bind (default 127.0.0.1)
  --db <file | :memory:>     SQLite database file (default ./tokenvault.db)
  --synchronous <full|normal> SQLite durability of each commit (default full)
  --shared-db                Let other processes open the SQLite file while serving (by default
                             the server holds it exclusively: faster reads, see README)
  --postgres <url>           Use PostgreSQL instead of SQLite: postgres://user@host:5432/db
                             (instances sharing the database may run side by side)
  --postgres-schema <name>   Schema of the tokenvault tables (default public; created if missing)
  --header-prefix <prefix>   Header prefix: <prefix>-API-KEY, <prefix>-IDEMPOTENCY-KEY (default SVC)
  --max-body-bytes <n>       Largest request body accepted (default 1048576)
  --allow-private-network    Let reactor fetch reach loopback and private addresses (development)
  --allow-host <host>        A host reactor code may fetch (repeatable; *.example.com for subdomains)
  -h, --help                 Show this help

Environment:
  TOKENVAULT_MASTER_KEY      Base64 of 32 bytes. Without it, :memory: uses an ephemeral key and a
                             file database uses (or creates, mode 0600) <db>.key beside it.
                             Required with --postgres. Generate one with
                             node -e "console.log(require('crypto').randomBytes(32).toString('base64'))"
  TOKENVAULT_ADMIN_KEY       API key (at least ${MIN_KEY_LENGTH} characters) of the management application
                             created on a database with no tenant; generated and printed when unset.
  PGPASSWORD                 The PostgreSQL password, when the URL has none (a URL on the command
                             line is visible to other users in the process list).
`;

const KEYS_HELP = `Usage: tokenvault keys rotate [options]

Makes a new data key for every tenant (or the one given); new writes use it, and existing tokens
are re-encrypted under it unless --skip-reencrypt is given.

Options:
  --db <file>                SQLite database file (default ./tokenvault.db)
  --postgres <url>           A PostgreSQL database instead (postgres://user@host:5432/db)
  --postgres-schema <name>   Schema of the tokenvault tables (default public)
  --tenant <id>              Only this tenant
  --skip-reencrypt           Rotate only; older tokens stay readable under their key
  -h, --help                 Show this help

Environment:
  TOKENVAULT_MASTER_KEY      Base64 of 32 bytes (else, for SQLite, the key file <db>.key is used)
  PGPASSWORD                 The PostgreSQL password, when the URL has none
`;

const MIGRATE_HELP = `Usage: tokenvault migrate [options]

Applies pending migrations to the database (serve does this too, on start).

Options:
  --db <file>                SQLite database file (default ./tokenvault.db)
  --postgres <url>           A PostgreSQL database instead (postgres://user@host:5432/db); instances
                             migrating at once are serialized by an advisory lock
  --postgres-schema <name>   Schema of the tokenvault tables (default public; created if missing)
  -h, --help                 Show this help

Environment:
  PGPASSWORD                 The PostgreSQL password, when the URL has none
`;

/**
 * Runs the CLI with these arguments (without `node` and the script) and returns the exit code.
 * `serve` returns once `io.signal` aborts and the server has drained and closed.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        return await serve(rest, io);
      case 'keys':
        return await keys(rest, io);
      case 'migrate':
        return await migrate(rest, io);
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        io.stdout(MAIN_HELP);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`tokenvault: ${error.message}\nRun 'tokenvault ${helpTarget(command)}--help' for usage.\n`);
      return 2;
    }
    if (error instanceof CliError || error instanceof VaultError) {
      io.stderr(`tokenvault: ${error.message}\n`);
      return 1;
    }
    // Name only: a message could quote something it should not.
    io.stderr(`tokenvault: unexpected ${error instanceof Error ? error.name : 'error'}${error instanceof Error && 'code' in error ? ` (${String(error.code)})` : ''}\n`);
    return 1;
  }
}

function helpTarget(command: string | undefined): string {
  return command === 'serve' || command === 'migrate' ? `${command} ` : command === 'keys' ? 'keys rotate ' : '';
}

/** Runs parseArgs, turning its errors (unknown flag, missing value…) into usage errors. */
function parse<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
}

async function serve(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parse(() => parseArgs({ args: [...args], strict: true, allowPositionals: false, options: {
    port: { type: 'string', default: '8080' },
    host: { type: 'string', default: '127.0.0.1' },
    ...STORE_OPTIONS,
    synchronous: { type: 'string' },
    'shared-db': { type: 'boolean', default: false },
    'header-prefix': { type: 'string', default: 'SVC' },
    'max-body-bytes': { type: 'string', default: '1048576' },
    'allow-private-network': { type: 'boolean', default: false },
    'allow-host': { type: 'string', multiple: true },
    help: { type: 'boolean', short: 'h', default: false },
  } }));
  if (values.help) {
    io.stdout(SERVE_HELP);
    return 0;
  }
  const target = storeTarget(values);
  if (target.kind === 'sqlite') target.exclusive = !values['shared-db'];
  else if (values['shared-db']) throw new UsageError('--shared-db applies to SQLite (--db) only');
  const port = integerFlag('port', values.port, 0, 65535);
  const maxBodyBytes = integerFlag('max-body-bytes', values['max-body-bytes'], 1, 1024 ** 3);
  const adminKey = io.env['TOKENVAULT_ADMIN_KEY'];
  if (adminKey !== undefined && adminKey.length < MIN_KEY_LENGTH) {
    throw new CliError(`TOKENVAULT_ADMIN_KEY must be at least ${MIN_KEY_LENGTH} characters`);
  }
  const logger = consoleLogger;
  const egress: { allowPrivateNetwork?: boolean; allowHosts?: string[] } = {};
  if (values['allow-private-network']) egress.allowPrivateNetwork = true;
  if (values['allow-host'] && values['allow-host'].length > 0) egress.allowHosts = values['allow-host'];

  const vault = await openVault(target, io, logger, { reactors: { egress } }, true);
  let server: Server | undefined;
  try {
    const handler = createFetchHandler(vault, { headerPrefix: values['header-prefix'], maxBodyBytes, logger });
    // Instances sharing a PostgreSQL database may start together: one of them creates the tenant.
    if (vault.store instanceof PostgresStore) await vault.store.withLock('bootstrap', () => bootstrap(vault, adminKey, io));
    else await bootstrap(vault, adminKey, io);
    server = createServer(toNodeListener(handler));
    const address = await listen(server, port, values.host);
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    const url = `http://${host}:${address.port}`;
    io.stdout(`listening on ${url}\n`);
    io.onListening?.(url);
    await aborted(io.signal);
    io.stderr('tokenvault: shutting down (draining in-flight requests)\n');
    await shutdown(server);
    server = undefined;
    return 0;
  } finally {
    if (server) await shutdown(server).catch(() => undefined);
    await vault.close();
  }
}

/** On a database with no tenant: one tenant and its management application. */
async function bootstrap(vault: Vault, adminKey: string | undefined, io: CliIo): Promise<void> {
  const tenants = await vault.listTenants();
  if (tenants.length > 0) return;
  const { tenant, application } = await vault.createTenant({
    name: 'default',
    applicationName: 'Administrator',
    ...(adminKey === undefined ? {} : { adminKey }),
  });
  io.stdout(`created tenant ${tenant.id} with management application ${application.id}\n`);
  if (adminKey === undefined) {
    io.stdout(`admin API key (shown once, store it now): ${application.key}\n`);
  } else {
    io.stdout('its API key is TOKENVAULT_ADMIN_KEY\n');
  }
}

async function keys(args: readonly string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === '-h' || sub === '--help') {
    io.stdout(KEYS_HELP);
    return 0;
  }
  if (sub !== 'rotate') throw new UsageError(sub === undefined ? "'keys' needs a subcommand: rotate" : `unknown subcommand 'keys ${sub}'`);
  const { values } = parse(() => parseArgs({ args: [...rest], strict: true, allowPositionals: false, options: {
    ...STORE_OPTIONS,
    tenant: { type: 'string' },
    'skip-reencrypt': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  } }));
  if (values.help) {
    io.stdout(KEYS_HELP);
    return 0;
  }
  const target = storeTarget(values);
  if (target.kind === 'sqlite' && target.db !== ':memory:' && !existsSync(target.db)) throw new CliError(`no database at ${target.db}`);
  const vault = await openVault(target, io, consoleLogger, {}, false);
  try {
    const tenants = await vault.listTenants();
    const chosen = values.tenant === undefined ? tenants : tenants.filter((t) => t.id === values.tenant);
    if (values.tenant !== undefined && chosen.length === 0) throw new CliError('no tenant with that id in this database');
    for (const tenant of chosen) {
      const version = await vault.keys.rotate(tenant.id);
      let done = 0;
      if (!values['skip-reencrypt']) {
        done = await vault.keys.reencrypt(tenant.id, {
          onProgress: (p) => io.stderr(`tenant ${p.tenantId}: re-encrypted ${p.done}/${p.total}\n`),
        });
      }
      io.stdout(`tenant ${tenant.id}: data key version ${version}${values['skip-reencrypt'] ? '' : `, ${done} tokens re-encrypted`}\n`);
    }
    if (chosen.length === 0) io.stdout('no tenants: nothing to rotate\n');
    return 0;
  } finally {
    await vault.close();
  }
}

async function migrate(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parse(() => parseArgs({ args: [...args], strict: true, allowPositionals: false, options: {
    ...STORE_OPTIONS,
    help: { type: 'boolean', short: 'h', default: false },
  } }));
  if (values.help) {
    io.stdout(MIGRATE_HELP);
    return 0;
  }
  const target = storeTarget(values);
  // Migrations need no master key: they touch the schema, not the data.
  const store = openStore(target);
  try {
    await store.migrate();
  } catch (error) {
    throw storeError(error, target);
  } finally {
    await Promise.resolve(store.close()).catch(() => undefined);
  }
  io.stdout(`${describeTarget(target)}: migrations applied; the schema is up to date\n`);
  return 0;
}

/** Where the vault's data lives: an SQLite file (or :memory:), or a PostgreSQL database and schema. */
type StoreTarget =
  /** exclusive: the process holds the file alone while it runs (serve, unless --shared-db). */
  | { kind: 'sqlite'; db: string; synchronous: 'full' | 'normal'; exclusive: boolean }
  | { kind: 'postgres'; url: string; schema: string | undefined };

/** The store flags every command takes. Defaults are applied by storeTarget, which must see what was given. */
const STORE_OPTIONS = {
  db: { type: 'string' },
  postgres: { type: 'string' },
  'postgres-schema': { type: 'string' },
} as const;

function storeTarget(values: { db?: string; postgres?: string; 'postgres-schema'?: string; synchronous?: string }): StoreTarget {
  if (values.postgres !== undefined) {
    if (values.db !== undefined) throw new UsageError('--db and --postgres cannot be combined: choose SQLite (--db) or PostgreSQL (--postgres)');
    if (values.synchronous !== undefined) throw new UsageError('--synchronous applies to SQLite (--db) only');
    return { kind: 'postgres', url: values.postgres, schema: values['postgres-schema'] };
  }
  if (values['postgres-schema'] !== undefined) throw new UsageError('--postgres-schema needs --postgres');
  const synchronous = values.synchronous ?? 'full';
  if (synchronous !== 'full' && synchronous !== 'normal') throw new UsageError("--synchronous must be 'full' or 'normal'");
  return { kind: 'sqlite', db: values.db ?? './tokenvault.db', synchronous, exclusive: false };
}

/** For messages: the file, or the PostgreSQL URL without its password. */
function describeTarget(target: StoreTarget): string {
  if (target.kind === 'sqlite') return target.db;
  return `${redactConnectionString(target.url)}${target.schema === undefined ? '' : ` (schema ${target.schema})`}`;
}

function openStore(target: StoreTarget): Store {
  try {
    if (target.kind === 'sqlite') return createSqliteStore({ filename: target.db, synchronous: target.synchronous, exclusive: target.exclusive });
    return createPostgresStore({ connectionString: target.url, ...(target.schema === undefined ? {} : { schema: target.schema }) });
  } catch (error) {
    throw storeError(error, target);
  }
}

/** A database that cannot be opened, said plainly, and never with a password. */
function storeError(thrown: unknown, target: StoreTarget): unknown {
  // The stores report a busy or unreachable database as a 503; the CLI names the driver's cause.
  const error = thrown instanceof UnavailableError && thrown.cause !== undefined ? thrown.cause : thrown;
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

async function openVault(
  target: StoreTarget,
  io: CliIo,
  logger: Logger,
  extra: Pick<VaultOptions, 'reactors'>,
  mayCreateKey: boolean,
): Promise<Vault> {
  let masterKey: string;
  if (target.kind === 'sqlite') {
    const { db } = target;
    if (db !== ':memory:' && !existsSync(dirname(resolve(db)))) throw new CliError(`cannot open the database ${db}: its directory does not exist`);
    masterKey = resolveMasterKey(db, io, mayCreateKey);
  } else {
    masterKey = requiredMasterKey(io);
  }
  const store = openStore(target);
  let vault: Vault | undefined;
  try {
    vault = await createVault({ store, masterKey, logger, ...extra });
    await checkMasterKey(vault, target);
    return vault;
  } catch (error) {
    if (vault) await vault.close().catch(() => undefined);
    else await Promise.resolve(store.close()).catch(() => undefined);
    throw storeError(error, target);
  }
}

/**
 * Fails at start, not on the first request, when the master key is not the one the database's
 * tenant keys were wrapped with (a wrong TOKENVAULT_MASTER_KEY, or another database's key file).
 */
async function checkMasterKey(vault: Vault, target: StoreTarget): Promise<void> {
  // verify reads only: a check must not create keys (a tenant without keys gets them on first use).
  for (const tenant of await vault.listTenants()) {
    if (!(await vault.keys.verify(tenant.id))) {
      const where = describeTarget(target);
      const check = target.kind === 'sqlite' ? `TOKENVAULT_MASTER_KEY or ${target.db}.key` : 'TOKENVAULT_MASTER_KEY';
      throw new CliError(`the master key does not match the one ${where} was created with (check ${check})`);
    }
  }
}

/**
 * The master key: TOKENVAULT_MASTER_KEY; else an ephemeral one for `:memory:`; else the key file
 * beside the database, created (mode 0600) when neither it nor the database exists yet.
 */
function resolveMasterKey(db: string, io: CliIo, mayCreate: boolean): string {
  const fromEnv = masterKeyFromEnv(io);
  if (fromEnv !== undefined) return fromEnv;
  if (db === ':memory:') return generateMasterKey();
  const keyFile = `${db}.key`;
  if (existsSync(keyFile)) {
    const mode = statSync(keyFile).mode & 0o777;
    if ((mode & 0o077) !== 0) io.stderr(`tokenvault: warning: ${keyFile} is readable by other users (mode ${mode.toString(8)}); run chmod 600 on it\n`);
    const key = readFileSync(keyFile, 'utf8').trim();
    try {
      decodeMasterKey(key);
    } catch {
      throw new CliError(`${keyFile} does not hold a master key (the base64 of 32 bytes)`);
    }
    return key;
  }
  if (!mayCreate || (existsSync(db) && statSync(db).size > 0)) {
    throw new CliError(`no master key for ${db}: set TOKENVAULT_MASTER_KEY, or restore its key file ${keyFile}`);
  }
  const key = generateMasterKey();
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(keyFile, 0o600);
  io.stderr(
    `tokenvault: warning: TOKENVAULT_MASTER_KEY is not set; generated a master key in ${keyFile} (mode 0600).\n` +
      '  Back it up: without it the database cannot be read. In production, set TOKENVAULT_MASTER_KEY.\n',
  );
  return key;
}

/** TOKENVAULT_MASTER_KEY when set (checked to be a key, never printed), else undefined. */
function masterKeyFromEnv(io: CliIo): string | undefined {
  const fromEnv = io.env['TOKENVAULT_MASTER_KEY'];
  if (fromEnv === undefined || fromEnv === '') return undefined;
  try {
    decodeMasterKey(fromEnv);
  } catch {
    throw new CliError('TOKENVAULT_MASTER_KEY must be the base64 of 32 bytes (e.g. `openssl rand -base64 32`)');
  }
  return fromEnv;
}

/**
 * With PostgreSQL the key must come from the environment: there is no database file to keep a
 * generated key beside, and a key kept only on one host would lock every other instance out.
 */
function requiredMasterKey(io: CliIo): string {
  const key = masterKeyFromEnv(io);
  if (key !== undefined) return key;
  throw new CliError(
    'TOKENVAULT_MASTER_KEY is required with --postgres (there is no database file to keep a generated key beside).\n' +
      `  Generate one with: node -e "console.log(require('crypto').randomBytes(32).toString('base64'))"\n` +
      '  and keep it safe: without it nothing in the database can be decrypted.',
  );
}

function integerFlag(name: string, value: string | undefined, min: number, max: number): number {
  if (value === undefined || !/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}`);
  }
  return Number(value);
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(new CliError(`cannot listen on ${host}:${port}: ${error.code ?? error.name}`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

function aborted(signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return new Promise(() => undefined);
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** Stops accepting, lets in-flight requests finish (closing idle keep-alive sockets), then closes. */
async function shutdown(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Requests still running after the grace period are cut off.
  const timer = setTimeout(() => server.closeAllConnections(), 10_000);
  timer.unref();
  // Keep-alive sockets that finish a response while draining become idle: close those too.
  const sweep = setInterval(() => server.closeIdleConnections(), 100);
  sweep.unref();
  try {
    await closed;
  } finally {
    clearTimeout(timer);
    clearInterval(sweep);
  }
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(entry)).href;
  } catch {
    return false;
  }
}

if (isMain()) {
  const controller = new AbortController();
  let signals = 0;
  const onSignal = () => {
    signals++;
    if (signals > 1) process.exit(1);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const code = await runCli(process.argv.slice(2), {
    env: process.env,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    signal: controller.signal,
  });
  process.exit(code);
}
