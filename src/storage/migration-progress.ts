import type { Clock } from '../common/clock.js';
import type { MigrationProgress } from './store.js';

/** A migration's progress as people read it, with the time left at the rate so far. */
export interface MigrationProgressLine {
  message: string;
  fields: { version: number; table: string; done: number; total: number; percent: number; secondsLeft: number | null };
}

/**
 * Turns the batch reports of `Store.migrate()` into lines with an estimate of the time left: the
 * rate is that of this run (rows done since its first report, over the time since), so a resumed
 * migration does not count the rows an earlier run copied as done in no time.
 */
export function migrationProgressLines(clock: Clock, write: (line: MigrationProgressLine) => void): (progress: MigrationProgress) => void {
  let first: { at: number; done: number; version: number } | null = null;
  return (progress) => {
    const now = clock.now();
    if (first === null || first.version !== progress.version) first = { at: now, done: progress.done, version: progress.version };
    const rate = now > first.at ? (progress.done - first.done) / (now - first.at) : 0;
    const secondsLeft = rate > 0 ? Math.ceil((progress.total - progress.done) / rate / 1000) : null;
    const percent = progress.total === 0 ? 100 : Math.floor((progress.done / progress.total) * 100);
    const left = progress.done >= progress.total ? 'done' : secondsLeft === null ? 'estimating time left' : `about ${secondsLeft} s left`;
    write({
      message: `migration ${progress.version}: ${progress.table} ${progress.done} of ${progress.total} rows rewritten (${percent}%), ${left}`,
      fields: { version: progress.version, table: progress.table, done: progress.done, total: progress.total, percent, secondsLeft },
    });
  };
}
