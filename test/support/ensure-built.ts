import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildIfStale } from '../../scripts/build-if-stale.mjs';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const DIST = join(ROOT, 'dist');

/**
 * Tests that run the package as users do (child processes, the CLI, `import 'tokenvault'`) need
 * `dist/`. CI builds before testing; locally this rebuilds when a source is newer than the build
 * (the same check `npm start` makes).
 */
export function ensureBuilt(): void {
  buildIfStale(ROOT);
}
