import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isStale } from '../../scripts/build-if-stale.mjs';
import { ROOT } from '../support/ensure-built.js';

describe('npm start builds only when dist/ is stale (scripts/build-if-stale.mjs)', () => {
  it("the suite's own build is current, so `npm start` would not rebuild", () => {
    expect(isStale(ROOT)).toBe(false);
  });

  it('stale when dist/ is missing or a source (src/, package.json, tsup.config.ts) is newer; current otherwise', () => {
    const root = mkdtempSync(join(tmpdir(), 'tokenvault-stale-'));
    try {
      const at = (path: string, seconds: number) => utimesSync(join(root, path), seconds, seconds);
      mkdirSync(join(root, 'src', 'cli'), { recursive: true });
      for (const file of ['src/cli/serve.ts', 'package.json', 'tsup.config.ts']) writeFileSync(join(root, file), '');
      for (const path of ['src/cli/serve.ts', 'src/cli', 'src', 'package.json', 'tsup.config.ts']) at(path, 1000);
      expect(isStale(root)).toBe(true);
      mkdirSync(join(root, 'dist'));
      writeFileSync(join(root, 'dist', 'cli.js'), '');
      at('dist/cli.js', 2000);
      expect(isStale(root)).toBe(false);
      at('src/cli/serve.ts', 3000);
      expect(isStale(root)).toBe(true);
      at('src/cli/serve.ts', 1000);
      at('package.json', 3000);
      expect(isStale(root)).toBe(true);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
