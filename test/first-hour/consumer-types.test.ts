import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { DIST, ROOT, ensureBuilt } from '../support/ensure-built.js';

beforeAll(() => ensureBuilt(), 180_000);

it('a consumer file type-checks against the built dist/ declarations, importing tokenvault by name (test/fixtures/consumer)', () => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  let output: string;
  try {
    output = execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'test/fixtures/consumer'), '--listFiles'], { cwd: ROOT, encoding: 'utf8' });
  } catch (error) {
    throw new Error(`tsc failed:\n${(error as { stdout?: string }).stdout ?? String(error)}`);
  }
  const files = output.split('\n').filter(Boolean);
  // Resolved through the package's exports map to the build, never to the sources.
  expect(files).toContain(join(DIST, 'index.d.ts'));
  expect(files).toContain(join(DIST, 'http.d.ts'));
  expect(files.filter((f) => f.startsWith(join(ROOT, 'src')))).toEqual([]);
}, 60_000);

it('examples import tokenvault by package name, never the sources', async () => {
  const { readdirSync, readFileSync } = await import('node:fs');
  const dir = join(ROOT, 'examples');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(join(dir, file), 'utf8');
    expect(text, file).not.toMatch(/from '\.\.\/src|import\('\.\.\/src/);
    expect(text, file).toMatch(/from 'tokenvault(\/[a-z]+)?'/);
  }
});
