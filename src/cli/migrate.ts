/** `tokenvault migrate`: applies pending migrations (no master key needed: schema, not data). */
import { parseArgs } from 'node:util';
import { type CliIo, parse } from './io.js';
import type { MigrationOutcome } from '../storage/store.js';
import { migrationProgressLines } from '../storage/migration-progress.js';
import { systemClock } from '../common/clock.js';
import { STORE_OPTIONS, describeTarget, openStore, storeError, storeTarget, TIMEOUT_HELP } from './store-target.js';

export const MIGRATE_HELP = `Usage: tokenvault migrate [options]

Applies pending migrations to the database (serve does this too, on start). A migration that
rewrites a large table reports on stderr how far it got and the time left; stopped midway, it
resumes where it was when migrate (or serve) runs again.

Options:
  --db <file>                SQLite database file (default ./tokenvault.db)
  --postgres <url>           A PostgreSQL database instead (postgres://user@host:5432/db); instances
                             migrating at once are serialized by an advisory lock
  --postgres-schema <name>   Schema of the tokenvault tables (default public; created if missing)
  --postgres-prepared-statements <on|off>
                             Name statements so each connection prepares them once (default on;
                             off behind a pooler that loses them, such as PgBouncer 1.18)
${TIMEOUT_HELP}  -h, --help                 Show this help

Environment:
  PGPASSWORD                 The PostgreSQL password, when the URL has none
`;

/** Applies the migrations the database lacks. */
export async function migrate(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parse(() =>
    parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        ...STORE_OPTIONS,
        help: { type: 'boolean', short: 'h', default: false },
      },
    }),
  );
  if (values.help) {
    io.stdout(MIGRATE_HELP);
    return 0;
  }
  const target = storeTarget(values);
  // Migrations need no master key: they touch the schema, not the data.
  const store = openStore(target);
  let outcome: MigrationOutcome;
  try {
    const progress = migrationProgressLines(systemClock, (line) => io.stderr(`${line.message}\n`));
    outcome = await store.migrate({ onProgress: progress });
  } catch (error) {
    throw storeError(error, target);
  } finally {
    await Promise.resolve(store.close()).catch(() => undefined);
  }
  io.stdout(`${describeTarget(target)}: ${describeOutcome(outcome)}\n`);
  return 0;
}

/** "applied versions 12-14 (schema now at version 14)", or "schema already at version 14, nothing to apply". */
export function describeOutcome({ applied, version }: MigrationOutcome): string {
  if (applied.length === 0) return `schema already at version ${version}, nothing to apply`;
  const first = applied[0]!;
  const last = applied[applied.length - 1]!;
  // Applied versions are consecutive (each run applies what follows the recorded version).
  const which = first === last ? `version ${first}` : `versions ${first}-${last}`;
  return `applied ${which} (schema now at version ${version})`;
}
