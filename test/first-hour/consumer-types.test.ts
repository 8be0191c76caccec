import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { ROOT, ensureBuilt } from '../support/ensure-built.js';

beforeAll(() => ensureBuilt(), 180_000);

/**
 * The package as npm installs it: the packed tarball unpacked into a consumer's node_modules, next
 * to its declared dependencies only (nothing the repository has as a dev dependency), checked by a
 * strict consumer (`skipLibCheck: false`: the declarations' own imports must resolve).
 */
it('a strict consumer type-checks against the packed tarball, with only its dependencies installed (test/fixtures/consumer)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-consumer-'));
  try {
    // --ignore-scripts: the suite's setup built dist/ already, and prepack's build (whose output
    // would precede the JSON) is test/cli/pack.test.ts's subject.
    const [packed] = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8' })) as { filename: string }[];
    const installed = join(dir, 'node_modules', 'tokenvault');
    mkdirSync(installed, { recursive: true });
    execFileSync('tar', ['-xzf', join(dir, packed!.filename), '-C', installed, '--strip-components=1']);
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    // What npm would install beside it: its dependencies, and the consumer's own @types/node.
    for (const name of [...Object.keys(manifest.dependencies), '@types/node']) {
      mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true });
      symlinkSync(realpathSync(join(ROOT, 'node_modules', name)), join(dir, 'node_modules', name));
    }
    copyFileSync(join(ROOT, 'test/fixtures/consumer/consumer.ts'), join(dir, 'consumer.ts'));
    const tsconfig = JSON.parse(readFileSync(join(ROOT, 'test/fixtures/consumer/tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ ...tsconfig, compilerOptions: { ...tsconfig.compilerOptions, skipLibCheck: false } }));
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    let output: string;
    try {
      output = execFileSync(process.execPath, [tsc, '-p', dir, '--listFiles'], { cwd: dir, encoding: 'utf8' });
    } catch (error) {
      throw new Error(`tsc failed:\n${(error as { stdout?: string }).stdout ?? String(error)}`);
    }
    const files = output
      .split('\n')
      .filter(Boolean)
      .map((f) => realpathSync(f));
    expect(files).toContain(realpathSync(join(installed, 'dist', 'index.d.ts')));
    expect(files).toContain(realpathSync(join(installed, 'dist', 'sqlite.d.ts')));
    expect(files.filter((f) => f.startsWith(join(ROOT, 'src')))).toEqual([]);
    // Runtime imports are dependencies, imported rather than copied into dist/ (an upstream fix reaches users).
    const built = readdirSync(join(installed, 'dist'))
      .filter((f) => f.endsWith('.js'))
      .map((f) => readFileSync(join(installed, 'dist', f), 'utf8'));
    expect(built.some((text) => text.includes('from "standardwebhooks"'))).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);

it('examples import tokenvault by package name, never the sources', async () => {
  const dir = join(ROOT, 'examples');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(join(dir, file), 'utf8');
    expect(text, file).not.toMatch(/from '\.\.\/src|import\('\.\.\/src/);
    expect(text, file).toMatch(/from 'tokenvault(\/[a-z]+)?'/);
  }
});
