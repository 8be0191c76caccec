// Bench-only (test/bench/pg-statements.mjs): loaded into `tokenvault serve` with `--import`, it
// counts every statement the process sends to PostgreSQL (pg's Client.prototype.query: the pool's
// queries and a lent client's alike, BEGIN and COMMIT included), by the statement's opening words.
// On SIGUSR2 it writes the counts since the last signal to PG_COUNT_FILE and starts again from zero.
import { writeFileSync } from 'node:fs';
import pg from 'pg';

let counts = new Map();
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(config, ...rest) {
  const text = typeof config === 'string' ? config : config?.text;
  if (typeof text === 'string') {
    const kind = text
      .replace(/\s+/g, ' ')
      .replace(/"tv_[a-z0-9_]+"\./g, '')
      .slice(0, 70);
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return query.call(this, config, ...rest);
};

process.on('SIGUSR2', () => {
  const file = process.env.PG_COUNT_FILE;
  const out = Object.fromEntries(counts);
  counts = new Map();
  if (file) writeFileSync(file, JSON.stringify(out));
});
