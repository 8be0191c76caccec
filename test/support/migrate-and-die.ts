// Runs `migrate()` on a SQLite file and kills its own process (SIGKILL: no cleanup, no rollback
// hook) once the progress report says `after` rows are copied: what a crash midway leaves.
//   tsx test/support/migrate-and-die.ts <file> <batch size> <after>
import { createSqliteStore } from '../../src/sqlite.js';

const [filename, batch, after] = process.argv.slice(2);
const store = createSqliteStore({ filename: filename! });
await store.migrate({
  batchSize: Number(batch),
  onProgress: (progress) => {
    process.stdout.write(`${JSON.stringify(progress)}\n`);
    if (progress.done >= Number(after)) process.kill(process.pid, 'SIGKILL');
  },
});
process.stdout.write('finished without being killed\n');
