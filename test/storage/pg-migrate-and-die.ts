// Runs `migrate()` on a PostgreSQL schema and kills its own process (SIGKILL: no cleanup, no
// rollback, connections dropped) once the progress report says `after` rows are copied: what a
// crash midway leaves. Spawned by lean-tokens-migration.test.ts.
//   tsx test/storage/pg-migrate-and-die.ts <url> <schema> <batch size> <after>
import { createPostgresStore } from '../../src/postgres.js';

const [url, schema, batch, after] = process.argv.slice(2);
const store = createPostgresStore({ connectionString: url!, schema: schema!, max: 2 });
await store.migrate({
  batchSize: Number(batch),
  onProgress: (progress) => {
    process.stdout.write(`${JSON.stringify(progress)}\n`);
    if (progress.done >= Number(after)) process.kill(process.pid, 'SIGKILL');
  },
});
process.stdout.write('finished without being killed\n');
await store.close();
