/** Opening a vault from the CLI: the master key from the environment or the key file, checked at start. */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type KeyProvider, decodeMasterKey, generateMasterKey } from '../crypto/key-provider.js';
import { SealedError } from '../errors/errors.js';
import type { Logger } from '../common/logger.js';
import { type Operator, openOperator } from '../operator/operator.js';
import type { VaultOptions } from '../vault.js';
import { CliError, type CliIo } from './io.js';
import { type KeyFileOps, createKeyFile, nodeKeyFileOps, removeLeftovers } from './master-key-file.js';
import { type StoreTarget, describeTarget, openStore, storeError } from './store-target.js';

/**
 * Opens the vault on this target, as its operator (the CLI holds the store and the master key): the
 * master key from TOKENVAULT_MASTER_KEY or (SQLite) the key file beside the database, created when
 * `mayCreateKey` and the database is new; a key that does not match the database fails here rather
 * than on the first request. `serve` hands only `operator.vault` to the HTTP layer. A new key file
 * is whole and durable before the store opens (`keyFileOps`: node:fs, or a test's).
 */
export async function openOperatorAt(
  target: StoreTarget,
  io: CliIo,
  logger: Logger,
  extra: Pick<VaultOptions, 'reactors' | 'auditRetentionMs' | 'keyProvider'>,
  mayCreateKey: boolean,
  keyFileOps: KeyFileOps = nodeKeyFileOps,
): Promise<Operator> {
  // A key provider (an HSM, a split key: src/cli/key-custody.ts) replaces the master key.
  let key: { masterKey: string } | { keyProvider: KeyProvider };
  if (target.kind === 'sqlite') {
    const { db } = target;
    if (db !== ':memory:' && !existsSync(dirname(resolve(db)))) throw new CliError(`cannot open the database ${db}: its directory does not exist`);
    key = extra.keyProvider ? { keyProvider: extra.keyProvider } : { masterKey: resolveMasterKey(db, io, mayCreateKey, keyFileOps) };
  } else {
    key = extra.keyProvider ? { keyProvider: extra.keyProvider } : { masterKey: requiredMasterKey(io) };
  }
  const store = openStore(target);
  let operator: Operator | undefined;
  try {
    // The worker starts only once the command knows it serves (serve starts it); others never run jobs.
    operator = await openOperator({ store, logger, ...extra, ...key, jobs: { start: false } });
    await checkMasterKey(operator, target, 'keyProvider' in key);
    return operator;
  } catch (error) {
    if (operator) await operator.close().catch(() => undefined);
    else await Promise.resolve(store.close()).catch(() => undefined);
    throw storeError(error, target);
  }
}

/**
 * Fails at start, not on the first request, when the master key is not the one the database's
 * tenant keys were wrapped with (a wrong TOKENVAULT_MASTER_KEY, or another database's key file).
 */
async function checkMasterKey(operator: Operator, target: StoreTarget, provider: boolean): Promise<void> {
  // verify reads only: a check must not create keys (a tenant without keys gets them on first use).
  for (const tenant of await operator.listTenants()) {
    let matches: boolean;
    try {
      matches = await operator.keys.verify(tenant.id);
    } catch (error) {
      // A sealed vault checks the key when it is unsealed (against the split's key check value).
      if (error instanceof SealedError) return;
      throw error;
    }
    if (!matches) {
      const where = describeTarget(target);
      if (provider) throw new CliError(`the key provider's key does not unwrap the keys ${where} was created with (check the token and --pkcs11-key-label)`);
      const check = target.kind === 'sqlite' ? `TOKENVAULT_MASTER_KEY or ${target.db}.key` : 'TOKENVAULT_MASTER_KEY';
      throw new CliError(`the master key does not match the one ${where} was created with (check ${check})`);
    }
  }
}

/**
 * The master key: TOKENVAULT_MASTER_KEY; else an ephemeral one for `:memory:`; else the key file
 * beside the database, created (mode 0600) when neither it nor the database exists yet.
 */
function resolveMasterKey(db: string, io: CliIo, mayCreate: boolean, ops: KeyFileOps): string {
  const fromEnv = masterKeyFromEnv(io);
  if (fromEnv !== undefined) return fromEnv;
  if (db === ':memory:') return generateMasterKey();
  const keyFile = `${db}.key`;
  const dbIsNew = !existsSync(db) || statSync(db).size === 0;
  if (existsSync(keyFile) && statSync(keyFile).size === 0 && dbIsNew && mayCreate) {
    // An empty key file beside no data: an earlier start failed while writing it (before this file
    // was written atomically). No token can be under it, so it is replaced.
    io.stderr(`tokenvault: warning: ${keyFile} is empty and the database holds nothing yet; writing a new master key\n`);
    setEmptyKeyFileAside(keyFile, ops);
  }
  if (existsSync(keyFile)) return readKeyFile(keyFile, io, ops);
  if (!mayCreate || !dbIsNew) {
    throw new CliError(`no master key for ${db}: set TOKENVAULT_MASTER_KEY, or restore its key file ${keyFile}`);
  }
  const key = generateMasterKey();
  // 'exists': another process starting on this database wrote its key first; both use that one.
  if (createKeyFile(keyFile, key, ops) === 'exists') return readKeyFile(keyFile, io, ops);
  io.stderr(
    `tokenvault: warning: TOKENVAULT_MASTER_KEY is not set; generated a master key in ${keyFile} (mode 0600).\n` +
      '  Back it up: without it the database cannot be read. In production, set TOKENVAULT_MASTER_KEY.\n',
  );
  return key;
}

/**
 * Moves an empty key file out of the way without ever removing a real key: a rename is atomic, so
 * of two processes starting together on the leftover only one takes it; and should the file taken
 * aside have been replaced by a concurrent start's whole key since it was found empty, that key is
 * linked back (a link never replaces what is there) instead of being removed.
 */
function setEmptyKeyFileAside(keyFile: string, ops: KeyFileOps): void {
  const aside = `${keyFile}.empty-${process.pid}`;
  try {
    ops.rename(keyFile, aside);
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return; // another start took it first
    throw new CliError(`could not replace the empty master key file ${keyFile} (${(error as { code?: string }).code ?? 'error'}); remove it and start again`);
  }
  if (statSync(aside).size > 0) {
    try {
      ops.link(aside, keyFile);
    } catch {
      throw new CliError(
        `${keyFile} changed while this start replaced it as empty; another process is starting on the same database: keep ${aside}, stop the others and start one again`,
      );
    }
  }
  try {
    ops.unlink(aside);
  } catch {
    // Left beside the database: an empty file, or a second name of the key file just linked back.
  }
}

function readKeyFile(keyFile: string, io: CliIo, ops: KeyFileOps): string {
  const mode = statSync(keyFile).mode & 0o777;
  if ((mode & 0o077) !== 0) io.stderr(`tokenvault: warning: ${keyFile} is readable by other users (mode ${mode.toString(8)}); run chmod 600 on it\n`);
  const key = readFileSync(keyFile, 'utf8').trim();
  try {
    decodeMasterKey(key);
  } catch {
    throw new CliError(`${keyFile} does not hold a master key (the base64 of 32 bytes)`);
  }
  removeLeftovers(keyFile, ops);
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
