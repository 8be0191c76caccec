/** `tokenvault keys split`: the local master key (key file or environment, SQLite or PostgreSQL) becomes shares for custodians (docs/key-custody.md). */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { decodeMasterKey } from '../crypto/key-provider.js';
import { splitMasterKey } from '../crypto/key-shares.js';
import { pinoVaultLogger } from '../observability/access-log.js';
import { CliError, type CliIo, UsageError, integerFlag, parse } from './io.js';
import { cliLogger } from './logging.js';
import { openOperatorAt } from './open-operator.js';
import { defaultShareSetFile } from './key-custody.js';
import { withSecretFiles } from './secret-files.js';
import { STORE_OPTIONS, describeTarget, storeTarget } from './store-target.js';

export const KEYS_SPLIT_HELP = `Usage: tokenvault keys split --shares <n> --threshold <k> [--db <file>]
       tokenvault keys split --shares <n> --threshold <k> --postgres <url> --key-shares-file <path>

Splits the master key into n shares (Shamir's secret sharing), any k of which rebuild it, prints
them once and records the split in a file (no secret: a key check value). The key is the one the
server uses: TOKENVAULT_MASTER_KEY, --master-key-file, or (SQLite) the key file <db>.key; a key
file is removed. From then on the server starts sealed (503 sealed, /readyz not ready) until k
custodians have given their shares with 'tokenvault unseal'. Stop the server first.

Options:
  --shares <n>               How many shares (2 to 255)
  --threshold <k>            How many of them open the vault (2 to n)
  --db <file>                SQLite database file (default ./tokenvault.db)
  --postgres <url>           A PostgreSQL database instead (the key from TOKENVAULT_MASTER_KEY or
                             --master-key-file)
  --postgres-schema <name>   Schema of the tokenvault tables (default public)
  --postgres-password-file <file>
                             Read the PostgreSQL password from this file (when PGPASSWORD is unset)
  --master-key-file <file>   The master key, read from this file (removed once split)
  --key-shares-file <path>   Where the split's record goes (default <db>.key-shares; required with
                             --postgres): every server on the database starts with
                             --key-shares-file <path>
  -h, --help                 Show this help
`;

export async function keysSplit(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parse(() =>
    parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        ...STORE_OPTIONS,
        'postgres-password-file': { type: 'string' },
        'master-key-file': { type: 'string' },
        'key-shares-file': { type: 'string' },
        shares: { type: 'string' },
        threshold: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }),
  );
  if (values.help) {
    io.stdout(KEYS_SPLIT_HELP);
    return 0;
  }
  if (values.shares === undefined || values.threshold === undefined) throw new UsageError('keys split needs --shares <n> and --threshold <k>');
  const shares = integerFlag('shares', values.shares, 2, 255);
  const threshold = integerFlag('threshold', values.threshold, 2, shares);
  const target = storeTarget(values);
  if (target.kind === 'sqlite' && target.db === ':memory:') throw new UsageError('keys split needs a database that outlives the process: an SQLite file (--db) or --postgres');
  const recordFile = values['key-shares-file'] ?? defaultShareSetFile(target);
  if (recordFile === undefined) throw new UsageError('keys split --postgres needs --key-shares-file <path>: where the record of the split goes (every server then starts with it)');
  if (existsSync(recordFile)) throw new CliError(`the master key is split already (${recordFile})`);
  if (target.kind === 'sqlite' && !existsSync(target.db)) throw new CliError(`no database at ${target.db}`);
  const fromEnv = Boolean(io.env['TOKENVAULT_MASTER_KEY']);
  const given = values['master-key-file'];
  io = withSecretFiles(io, values);
  // Where the key comes from decides what is left to remove: a file here, or the environment (yours to change).
  const source: { file: string } | { env: true } = fromEnv
    ? { env: true }
    : given !== undefined
      ? { file: given }
      : target.kind === 'sqlite'
        ? { file: `${target.db}.key` }
        : { env: true };
  if ('file' in source && given === undefined && !existsSync(source.file)) {
    throw new CliError(`no master key file ${source.file} to split (or set TOKENVAULT_MASTER_KEY / --master-key-file)`);
  }
  // The key must be this database's; on SQLite no server may be running on it (it holds the file).
  const operator = await openOperatorAt(target, io, pinoVaultLogger(cliLogger(io)), {}, false);
  await operator.close();
  const key = decodeMasterKey('file' in source && given === undefined ? readFileSync(source.file, 'utf8') : io.env['TOKENVAULT_MASTER_KEY']!);
  const split = await splitMasterKey(key, shares, threshold);
  key.fill(0);
  writeDurably(recordFile, `${JSON.stringify(split.record, null, 2)}\n`);
  const where = describeTarget(target);
  const unsealWith = target.kind === 'sqlite' && values['key-shares-file'] === undefined ? `--db ${target.db}` : "--admin-socket <the server's socket>";
  io.stdout(
    `The master key of ${where} is split into ${shares} shares; any ${threshold} of them unseal the vault (split ${split.record.set}).\n` +
      'Give each share to its custodian now: they are shown this once and kept nowhere.\n\n' +
      split.lines.map((line, i) => `share ${i + 1}: ${line}\n`).join('') +
      `\n${recordFile} records the split (it holds no secret)` +
      (target.kind === 'sqlite' && values['key-shares-file'] === undefined ? '.\n' : `: start every server on this database with --key-shares-file ${recordFile}.\n`) +
      `The server now starts sealed: each custodian runs 'tokenvault unseal ${unsealWith}' and pastes a share.\n`,
  );
  if ('file' in source) {
    try {
      unlinkSync(source.file);
      fsyncDir(dirname(source.file));
      io.stdout(`The key file ${source.file} is removed.\n`);
    } catch (error) {
      // A read-only secret mount: the split stands, and the file must go by the operator's hand.
      io.stderr(`tokenvault: warning: could not remove the key file ${source.file} (${(error as { code?: string }).code ?? 'error'}): remove it and every copy of it now\n`);
    }
  } else {
    io.stderr(
      'tokenvault: warning: the key came from TOKENVAULT_MASTER_KEY, which this command cannot take back: remove it from the environment ' +
        'and the secret store it came from now (a server refuses to start with both the key and the split record)\n',
    );
  }
  return 0;
}

function writeDurably(file: string, text: string): void {
  const fd = openSync(file, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  fsyncDir(dirname(file));
}

function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // A platform that cannot sync a directory: the file itself is synced.
  }
}
