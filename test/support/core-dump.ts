/**
 * Core dumps of a running process for the key custody scans (docs/key-custody.md, "What a memory
 * scan shows"): `gcore` (from gdb) writes every mapping of the process to a file, which is searched
 * for the byte strings given and then removed. A core holds what /proc/<pid>/mem shows, written
 * the way an operator, a crash handler or an attacker with the same rights would take it away.
 * `TOKENVAULT_TEST_CORE_DUMPS=1` runs them (see itWithGcore).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'vitest';

const installed = spawnSync('sh', ['-c', 'command -v gcore && command -v gdb']).status === 0;
export const GCORE_SKIP_REASON = 'gcore is not installed (apt-get install gdb)';

/**
 * Core dump scans run when TOKENVAULT_TEST_CORE_DUMPS=1: a dump of a serving process is hundreds of
 * megabytes (an idle node process: 680 MB in 7.5 s), and on a loaded 2-core machine one took
 * minutes, more than the suite's budget; `.ci/run` runs them in a step of its own after the suite
 * (docs/testing.md, "Outside the suite"). Asked for and gcore missing: a failure.
 */
const asked = process.env['TOKENVAULT_TEST_CORE_DUMPS'] === '1';
export const itWithGcore: typeof it = (asked ? it : it.skip) as typeof it;

export function requireGcore(): void {
  if (!installed) throw new Error(GCORE_SKIP_REASON);
}

/** How many times each needle occurs in a core dump of `pid` (taken into `dir`, removed after), and the dump's size. */
export function coreDumpCounts(pid: number, needles: readonly Buffer[], dir: string): { counts: number[]; bytes: number } {
  requireGcore();
  const prefix = join(dir, 'core');
  const file = `${prefix}.${pid}`;
  execFileSync('gcore', ['-o', prefix, String(pid)], { stdio: 'ignore' });
  try {
    const counts = needles.map(() => 0);
    const longest = Math.max(...needles.map((n) => n.length));
    const chunk = Buffer.allocUnsafe(16 * 1024 * 1024);
    const fd = openSync(file, 'r');
    let bytes = 0;
    try {
      // Overlapping reads (by the longest needle less one byte), each hit counted at its start only once.
      let position = 0;
      let carried = 0;
      for (;;) {
        const read = readSync(fd, chunk, carried, chunk.length - carried, position);
        if (read === 0) break;
        const view = chunk.subarray(0, carried + read);
        needles.forEach((needle, i) => {
          for (let at = view.indexOf(needle); at !== -1; at = view.indexOf(needle, at + 1)) {
            // A hit wholly inside the carried bytes was counted in the previous chunk.
            if (at + needle.length > carried) counts[i]! += 1;
          }
        });
        position += read;
        bytes += read;
        carried = Math.min(longest - 1, view.length);
        view.copy(chunk, 0, view.length - carried);
      }
    } finally {
      closeSync(fd);
    }
    if (bytes !== statSync(file).size) throw new Error('the core dump was not read whole');
    return { counts, bytes };
  } finally {
    rmSync(file, { force: true });
  }
}
