/** `tokenvault keys split`: the local master key file becomes shares for custodians (docs/key-custody.md). */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { decodeMasterKey } from '../crypto/key-provider.js';
import { splitMasterKey } from '../crypto/key-shares.js';
import { pinoVaultLogger } from '../observability/access-log.js';
import { CliError, type CliIo, UsageError, integerFlag, parse } from './io.js';
import { cliLogger } from './logging.js';
import { openOperatorAt } from './open-operator.js';
import { storeTarget } from './store-target.js';
import { defaultAdminSocket } from './unseal.js';

export const KEYS_SPLIT_HELP = `Usage: tokenvault keys split --shares <n> --threshold <k> [--db <file>]

Splits the master key file <db>.key into n shares (Shamir's secret sharing), any k of which rebuild
it, prints them once, records the split in <db>.key-shares (no secret: a key check value) and
removes the key file. From then on the server starts sealed (503 sealed, /readyz not ready) until
k custodians have given their shares with 'tokenvault unseal'. Stop the server first.

Options:
  --shares <n>               How many shares (2 to 255)
  --threshold <k>            How many of them open the vault (2 to n)
  --db <file>                SQLite database file (default ./tokenvault.db)
  -h, --help                 Show this help
`;

export async function keysSplit(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parse(() =>
    parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: { db: { type: 'string' }, shares: { type: 'string' }, threshold: { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
    }),
  );
  if (values.help) {
    io.stdout(KEYS_SPLIT_HELP);
    return 0;
  }
  if (values.shares === undefined || values.threshold === undefined) throw new UsageError('keys split needs --shares <n> and --threshold <k>');
  const shares = integerFlag('shares', values.shares, 2, 255);
  const threshold = integerFlag('threshold', values.threshold, 2, shares);
  const target = storeTarget({ ...(values.db === undefined ? {} : { db: values.db }) });
  if (target.kind !== 'sqlite' || target.db === ':memory:') throw new UsageError('keys split works on the key file of an SQLite database file (--db)');
  const { db } = target;
  const keyFile = `${db}.key`;
  const recordFile = `${db}.key-shares`;
  if (io.env['TOKENVAULT_MASTER_KEY'])
    throw new CliError('TOKENVAULT_MASTER_KEY is set: keys split splits the key file, and a key in the environment cannot be taken back; unset it');
  if (existsSync(recordFile)) throw new CliError(`the key of ${db} is split already (${recordFile})`);
  if (!existsSync(db)) throw new CliError(`no database at ${db}`);
  if (!existsSync(keyFile)) throw new CliError(`no master key file ${keyFile} to split`);
  // The key must be this database's, and no server may be running on it (it holds the file).
  const operator = await openOperatorAt(target, io, pinoVaultLogger(cliLogger(io)), {}, false);
  await operator.close();
  const key = decodeMasterKey(readFileSync(keyFile, 'utf8'));
  const split = await splitMasterKey(key, shares, threshold);
  key.fill(0);
  writeDurably(recordFile, `${JSON.stringify(split.record, null, 2)}\n`);
  io.stdout(
    `The master key of ${db} is split into ${shares} shares; any ${threshold} of them unseal the vault (split ${split.record.set}).\n` +
      'Give each share to its custodian now: they are shown this once and kept nowhere.\n\n' +
      split.lines.map((line, i) => `share ${i + 1}: ${line}\n`).join('') +
      `\nThe key file ${keyFile} is removed; ${recordFile} records the split (it holds no secret).\n` +
      `The server now starts sealed: each custodian runs 'tokenvault unseal --db ${db}' (socket ${defaultAdminSocket(db)}) and pastes a share.\n`,
  );
  unlinkSync(keyFile);
  fsyncDir(dirname(keyFile));
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
