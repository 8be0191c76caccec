/** `tokenvault keys rotate`: a new data key per tenant, and re-encryption of existing tokens under it. */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pinoVaultLogger } from '../observability/access-log.js';
import { cliLogger } from './logging.js';
import { CliError, type CliIo, UsageError, parse } from './io.js';
import { openOperatorAt } from './open-operator.js';
import { STORE_OPTIONS, storeTarget, TIMEOUT_HELP } from './store-target.js';
import { KEY_CUSTODY_ENV_HELP, KEY_CUSTODY_HELP, KEY_CUSTODY_OPTIONS, keyCustody } from './key-custody.js';
import { keysSplit } from './keys-split.js';
import { takeShares } from './sealed-start.js';
import { readLines } from './stdin-lines.js';

export const KEYS_HELP = `Usage: tokenvault keys rotate [options]
       tokenvault keys split --shares <n> --threshold <k> [--db <file> | --postgres <url> --key-shares-file <path>]
                                                                          (keys split --help)

Makes a new data key for every tenant (or the one given); new writes use it, and existing tokens
are re-encrypted under it unless --skip-reencrypt is given.

Options:
  --db <file>                SQLite database file (default ./tokenvault.db)
  --postgres <url>           A PostgreSQL database instead (postgres://user@host:5432/db)
  --postgres-schema <name>   Schema of the tokenvault tables (default public)
  --postgres-prepared-statements <on|off>
                             Name statements so each connection prepares them once (default on;
                             off behind a pooler that loses them, such as PgBouncer 1.18)
${TIMEOUT_HELP}${KEY_CUSTODY_HELP}  --tenant <id>              Only this tenant
  --skip-reencrypt           Rotate only; older tokens stay readable under their key
  --unseal-stdin             The master key is split: read the threshold of shares from standard
                             input, one per line (the key is assembled for this command only)
  -h, --help                 Show this help

Environment:
  TOKENVAULT_MASTER_KEY      Base64 of 32 bytes (else, for SQLite, the key file <db>.key is used)
${KEY_CUSTODY_ENV_HELP}  PGPASSWORD                 The PostgreSQL password, when the URL has none
`;

/** Rotates the data key of every tenant (or one) and re-encrypts its tokens unless told not to. */
export async function keys(args: readonly string[], io: CliIo, lines: AsyncIterable<string> = readLines(process.stdin)): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === '-h' || sub === '--help') {
    io.stdout(KEYS_HELP);
    return 0;
  }
  if (sub === 'split') return keysSplit(rest, io);
  if (sub !== 'rotate') throw new UsageError(sub === undefined ? "'keys' needs a subcommand: rotate or split" : `unknown subcommand 'keys ${sub}'`);
  const { values } = parse(() =>
    parseArgs({
      args: [...rest],
      strict: true,
      allowPositionals: false,
      options: {
        ...STORE_OPTIONS,
        ...KEY_CUSTODY_OPTIONS,
        tenant: { type: 'string' },
        'skip-reencrypt': { type: 'boolean', default: false },
        'unseal-stdin': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }),
  );
  if (values.help) {
    io.stdout(KEYS_HELP);
    return 0;
  }
  const target = storeTarget(values);
  if (target.kind === 'sqlite' && target.db !== ':memory:' && !existsSync(target.db)) throw new CliError(`no database at ${target.db}`);
  const custody = await keyCustody(values, target, io);
  if (custody.kind !== 'sealed' && values['unseal-stdin']) throw new UsageError('--unseal-stdin applies to a split master key (tokenvault keys split)');
  if (custody.kind === 'sealed') {
    // New data keys are wrapped by the master key: a split key is assembled here from the threshold
    // of shares (dual control of the rotation too), and wiped when the command ends.
    if (!values['unseal-stdin']) {
      throw new CliError(
        `the master key is split: rotating needs it, so give ${custody.record.threshold} shares on standard input with --unseal-stdin ` +
          '(one per line, as keys split printed them; stop the server first on SQLite)',
      );
    }
    await takeShares(custody.provider, lines, io);
    if (custody.provider.status().sealed) {
      custody.provider.seal();
      throw new CliError(`standard input ended before ${custody.record.threshold} distinct shares of the split were given: nothing was rotated`);
    }
  }
  const operator = await openOperatorAt(target, io, pinoVaultLogger(cliLogger(io)), custody.kind === 'local' ? {} : { keyProvider: custody.provider }, false).catch(
    (error: unknown) => {
      if (custody.kind === 'sealed') custody.provider.seal();
      throw error;
    },
  );
  try {
    const tenants = await operator.listTenants();
    const chosen = values.tenant === undefined ? tenants : tenants.filter((t) => t.id === values.tenant);
    if (values.tenant !== undefined && chosen.length === 0) throw new CliError('no tenant with that id in this database');
    for (const tenant of chosen) {
      const version = await operator.keys.rotate(tenant.id);
      let done = 0;
      if (!values['skip-reencrypt']) {
        done = await operator.keys.reencrypt(tenant.id, {
          onProgress: (p) => io.stderr(`tenant ${p.tenantId}: re-encrypted ${p.done}/${p.total}\n`),
        });
      }
      io.stdout(`tenant ${tenant.id}: data key version ${version}${values['skip-reencrypt'] ? '' : `, ${done} tokens re-encrypted`}\n`);
    }
    if (chosen.length === 0) io.stdout('no tenants: nothing to rotate\n');
    return 0;
  } finally {
    await operator.close();
    if (custody.kind === 'sealed') custody.provider.seal();
  }
}
