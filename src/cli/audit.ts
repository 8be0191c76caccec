/** `tokenvault audit verify` and `tokenvault audit export`: the tamper-evident audit trail (docs/audit.md). */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { TenantAuditVerification } from '../audit/audit-verify.js';
import { pinoVaultLogger } from '../observability/access-log.js';
import { cliLogger } from './logging.js';
import { CliError, type CliIo, UsageError, integerFlag, parse } from './io.js';
import { openOperatorAt } from './open-operator.js';
import { STORE_OPTIONS, storeTarget, TIMEOUT_HELP } from './store-target.js';

const STORE_HELP = `  --db <file>                SQLite database file (default ./tokenvault.db)
  --postgres <url>           A PostgreSQL database instead (postgres://user@host:5432/db)
  --postgres-schema <name>   Schema of the tokenvault tables (default public)
  --postgres-prepared-statements <on|off>
                             Name statements so each connection prepares them once (default on)
${TIMEOUT_HELP}`;

export const AUDIT_HELP = `Usage: tokenvault audit verify [options]
       tokenvault audit export --since <time> [options]

verify  Walks every tenant's audit chain (or one tenant's) and checks each entry's hash and MAC.
        Prints one line per tenant; names the first entry changed, removed, inserted or reordered,
        and exits 1 when a chain is broken.
export  Writes the entries from <time> on (ISO 8601, e.g. 2026-01-31T00:00:00Z) as JSON lines on
        stdout, for a SIEM.

Options:
${STORE_HELP}  --tenant <id>              verify: only this tenant
  --pending-grace <seconds>  verify: an unsealed entry younger than this is waiting for its
                             flush, not a break (default 60)
  --json                     verify: one JSON object per tenant instead of a line
  --since <time>             export: the first entry's time (required)
  -h, --help                 Show this help

Environment:
  TOKENVAULT_MASTER_KEY      Base64 of 32 bytes (else, for SQLite, the key file <db>.key is used)
  PGPASSWORD                 The PostgreSQL password, when the URL has none
`;

export async function audit(args: readonly string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === '-h' || sub === '--help') {
    io.stdout(AUDIT_HELP);
    return 0;
  }
  if (sub !== 'verify' && sub !== 'export') throw new UsageError(sub === undefined ? "'audit' needs a subcommand: verify or export" : `unknown subcommand 'audit ${sub}'`);
  const { values } = parse(() =>
    parseArgs({
      args: [...rest],
      strict: true,
      allowPositionals: false,
      options: {
        ...STORE_OPTIONS,
        tenant: { type: 'string' },
        'pending-grace': { type: 'string' },
        json: { type: 'boolean', default: false },
        since: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }),
  );
  if (values.help) {
    io.stdout(AUDIT_HELP);
    return 0;
  }
  const since = sub === 'export' ? sinceFlag(values.since) : null;
  const grace = values['pending-grace'] === undefined ? undefined : integerFlag('pending-grace', values['pending-grace'], 0, 86_400) * 1000;
  const target = storeTarget(values);
  if (target.kind === 'sqlite' && target.db !== ':memory:' && !existsSync(target.db)) throw new CliError(`no database at ${target.db}`);
  const operator = await openOperatorAt(target, io, pinoVaultLogger(cliLogger(io)), {}, false);
  try {
    if (since !== null) {
      const count = await operator.audit.export(since, (line) => io.stdout(line));
      io.stderr(`exported ${count} audit entries\n`);
      return 0;
    }
    const results = await operator.audit.verify({ ...(values.tenant === undefined ? {} : { tenantId: values.tenant }), ...(grace === undefined ? {} : { pendingGraceMs: grace }) });
    for (const result of results) io.stdout(values.json ? `${JSON.stringify(result)}\n` : `${describe(result)}\n`);
    if (results.length === 0) io.stdout('no audit entries\n');
    return results.some((r) => r.broken !== null) ? 1 : 0;
  } finally {
    await operator.close();
  }
}

function sinceFlag(value: string | undefined): number {
  if (value === undefined) throw new UsageError("'audit export' needs --since <time>");
  const ms = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2})?)?$/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw new UsageError('--since must be an ISO 8601 time, such as 2026-01-31T00:00:00Z');
  return ms;
}

function describe(r: TenantAuditVerification): string {
  const parts = [`${r.verified} entries verified`];
  if (r.cutThrough > 0) parts.push(`retention cut through #${r.cutThrough}`);
  if (r.unverifiedPrefix > 0) parts.push(`${r.unverifiedPrefix} entries written before the chain existed are not verified (its unverified prefix)`);
  if (r.pendingSeal > 0) parts.push(`${r.pendingSeal} waiting to be sealed`);
  parts.push(`head #${r.head.index}${r.head.hash === null ? '' : ` ${r.head.hash}`}`);
  return r.broken === null ? `tenant ${r.tenantId}: intact; ${parts.join('; ')}` : `tenant ${r.tenantId}: BROKEN: ${r.broken.message}; ${parts.join('; ')}`;
}
