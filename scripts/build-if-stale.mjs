#!/usr/bin/env node
// Builds dist/ with tsup only when a source is newer than the build: `npm start` and the test
// suite's global setup run it, so a current build starts at once. Sources: src/, package.json,
// tsup.config.ts.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The repository root (this file lives in scripts/). */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

/** True when dist/ is missing or older than a source. */
export function isStale(root = ROOT) {
  const marker = join(root, 'dist', 'cli.js');
  if (!existsSync(marker)) return true;
  const built = statSync(marker).mtimeMs;
  return ['src', 'package.json', 'tsup.config.ts'].some((source) => newest(join(root, source)) > built);
}

/** Runs tsup when dist/ is stale; returns whether it built. */
export function buildIfStale(root = ROOT) {
  if (!isStale(root)) return false;
  execFileSync('npx', ['tsup', '--silent'], { cwd: root, stdio: 'inherit' });
  return true;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) buildIfStale();
