/** `tokenvault --version`: the version of the installed package. */
import { readFileSync } from 'node:fs';

/**
 * The `version` of tokenvault's package.json: one level above the running module in dist/
 * (bundled), two above it in src/cli/ (tests run the sources).
 */
export function packageVersion(): string {
  for (const relative of ['../package.json', '../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { name?: unknown; version?: unknown };
      if (manifest.name === 'tokenvault' && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // Not there: try the next level.
    }
  }
  return 'unknown';
}
