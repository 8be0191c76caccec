/**
 * `tokenvault recover-admin`: when every administrator key is lost, the operator (who holds the
 * database and the master key) creates a new management application and gets its key.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pinoVaultLogger } from '../observability/access-log.js';
import { CliError, type CliIo, parse } from './io.js';
import { cliLogger } from './logging.js';
import { openOperatorAt } from './open-operator.js';
import { STORE_OPTIONS, storeTarget, TIMEOUT_HELP } from './store-target.js';

export const RECOVER_ADMIN_HELP = `Usage: tokenvault recover-admin [options]

Creates a new management application in a tenant and prints its API key (shown once). For an
operator who lost every administrator key: it needs the database and its master key, not an API
key. The creation is recorded in the tenant's audit log (operation application:recover, actor
operator). The old applications keep working: delete or regenerate them with the new key.

Options:
  --db <file>                SQLite database file (default ./tokenvault.db)
  --postgres <url>           A PostgreSQL database instead (postgres://user@host:5432/db)
  --postgres-schema <name>   Schema of the tokenvault tables (default public)
  --postgres-prepared-statements <on|off>
                             Name statements so each connection prepares them once (default on;
                             off behind a pooler that loses them, such as PgBouncer 1.18)
${TIMEOUT_HELP}  --tenant <id>              The tenant (required when the database holds more than one)
  --name <name>              The new application's name (default "Recovered administrator")
  -h, --help                 Show this help

Environment:
  TOKENVAULT_MASTER_KEY      Base64 of 32 bytes (else, for SQLite, the key file <db>.key is used)
  PGPASSWORD                 The PostgreSQL password, when the URL has none
`;

/** Creates the application and prints its key as the last line. */
export async function recoverAdmin(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parse(() =>
    parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        ...STORE_OPTIONS,
        tenant: { type: 'string' },
        name: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }),
  );
  if (values.help) {
    io.stdout(RECOVER_ADMIN_HELP);
    return 0;
  }
  const target = storeTarget(values);
  if (target.kind === 'sqlite' && (target.db === ':memory:' || !existsSync(target.db))) throw new CliError(`no database at ${target.db}`);
  const operator = await openOperatorAt(target, io, pinoVaultLogger(cliLogger(io)), {}, false);
  try {
    const tenants = await operator.listTenants();
    let tenantId = values.tenant;
    if (tenantId === undefined) {
      if (tenants.length === 0) throw new CliError('the database has no tenant (tokenvault serve creates the first one)');
      if (tenants.length > 1) throw new CliError(`the database has ${tenants.length} tenants: choose one with --tenant (${tenants.map((t) => t.id).join(', ')})`);
      tenantId = tenants[0]!.id;
    } else if (!tenants.some((t) => t.id === tenantId)) {
      throw new CliError('no tenant with that id in this database');
    }
    const application = await operator.recoverAdministrator(tenantId, values.name === undefined ? {} : { name: values.name });
    io.stdout(`created management application ${application.id} in tenant ${tenantId}\n\nadmin API key (shown once, store it now): ${application.key}\n`);
    return 0;
  } finally {
    await operator.close();
  }
}
