// Runs `migrate()` on a store and kills its own process (SIGKILL: no cleanup, no rollback hook,
// connections dropped) once the progress report says `after` rows are copied: what a crash midway
// leaves. Spawned by test/storage/lean-tokens-migration.test.ts.
//   tsx test/support/migrate-and-die.ts <batch size> <after> sqlite <file>
//   tsx test/support/migrate-and-die.ts <batch size> <after> postgres <url> <schema>
import { createPostgresStore } from '../../src/postgres.js';
import { createSqliteStore } from '../../src/sqlite.js';

const [batch, after, kind, where, schema] = process.argv.slice(2);
const store = kind === 'postgres' ? createPostgresStore({ connectionString: where!, schema: schema!, max: 2 }) : createSqliteStore({ filename: where! });
await store.migrate({
  batchSize: Number(batch),
  onProgress: (progress) => {
    process.stdout.write(`${JSON.stringify(progress)}\n`);
    if (progress.done >= Number(after)) process.kill(process.pid, 'SIGKILL');
  },
});
process.stdout.write('finished without being killed\n');
await store.close();
