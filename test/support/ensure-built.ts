import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const DIST = join(ROOT, 'dist');

function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/**
 * Tests that run the package as users do (child processes, the CLI, `import 'tokenvault'`) need
 * `dist/`. CI builds before testing; locally this rebuilds when src/ is newer than the build.
 */
export function ensureBuilt(): void {
  const marker = join(DIST, 'cli.js');
  if (existsSync(marker) && statSync(marker).mtimeMs >= newest(join(ROOT, 'src'))) return;
  execFileSync('npx', ['tsup', '--silent'], { cwd: ROOT, stdio: 'inherit' });
}
