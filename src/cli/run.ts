/** Dispatches `tokenvault <command>` to its module and turns errors into messages and exit codes. */
import { VaultError } from '../errors/errors.js';
import { AUDIT_HELP, audit } from './audit.js';
import { BACKUP_HELP, backup, restore, verify } from './backup.js';
import { CONFIG_HELP, config } from './config-command.js';
import { attributeConfigErrors } from './config-file.js';
import { CliError, type CliIo, UsageError } from './io.js';
import { KEYS_HELP, keys } from './keys.js';
import { MIGRATE_HELP, migrate } from './migrate.js';
import { RECOVER_ADMIN_HELP, recoverAdmin } from './recover-admin.js';
import { SERVE_HELP, serve } from './serve.js';
import { packageVersion } from './version.js';
import { UNSEAL_HELP, seal, unseal } from './unseal.js';

export { AUDIT_HELP, BACKUP_HELP, CONFIG_HELP, KEYS_HELP, MIGRATE_HELP, RECOVER_ADMIN_HELP, SERVE_HELP, UNSEAL_HELP };

const MAIN_HELP = `Usage: tokenvault <command> [options]

Commands:
  serve          Run the HTTP API on an embedded SQLite database or on PostgreSQL
  config check   Validate a serve config file (serve --config) without starting
  backup         Back up the database (online for SQLite; pg_dump for PostgreSQL)
  restore        Restore a backup into a new database
  verify         Open a (restored) database with its master key; count and decrypt a sample
  keys rotate    Make a new data key for each tenant (or one) and re-encrypt its tokens
  audit verify   Check every tenant's audit chain; name the first entry changed, removed or inserted
  audit export   Write audit entries from a time on as JSON lines (for a SIEM)
  keys split     Split the master key (its file, or TOKENVAULT_MASTER_KEY) into shares for custodians (the server starts sealed)
  unseal         Give a sealed server shares of its master key (from standard input)
  seal           Seal a running server again (its keys leave memory)
  migrate        Apply pending database migrations
  recover-admin  Create a new management application and print its key (lost admin key)

Options:
  -v, --version  Print the version
  -h, --help     Show this help

Run 'tokenvault <command> --help' for a command's options.
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
        // A bad value from --config or TOKENVAULT_<NAME> names its line or variable (src/cli/config-file.ts).
        return await attributeConfigErrors(() => serve(rest, io));
      case 'config':
        return await config(rest, io);
      case 'backup':
        return await backup(rest, io);
      case 'restore':
        return await restore(rest, io);
      case 'verify':
        return await verify(rest, io);
      case 'keys':
        return await keys(rest, io);
      case 'audit':
        return await audit(rest, io);
      case 'migrate':
        return await migrate(rest, io);
      case 'unseal':
        return await unseal(rest, io);
      case 'seal':
        return await seal(rest, io);
      case 'recover-admin':
        return await recoverAdmin(rest, io);
      case '-v':
      case '--version':
      case 'version':
        io.stdout(`tokenvault ${packageVersion()}\n`);
        return 0;
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
  if (['serve', 'migrate', 'recover-admin', 'config', 'audit', 'unseal', 'seal'].includes(command ?? '')) return `${command} `;
  return command === 'keys' ? 'keys rotate ' : '';
}
