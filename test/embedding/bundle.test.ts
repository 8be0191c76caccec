/**
 * tokenvault bundled into an application with esbuild, as docs/bundling.md says to: the bundle runs
 * a reactor. The worker file is bundled beside the application; left out, the vault fails at
 * creation naming the path and the option; with QuickJS bundled in, a reactor gets a 503 naming
 * the cause (and the logger has it), never "try again" or a 500 that nothing logged.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ROOT, ensureBuilt } from '../support/ensure-built.js';
import { dropSchema, endAdmin, freshSchema, PG_URL } from '../support/postgres.js';

const run = promisify(execFile);
let dir: string;

beforeAll(() => {
  ensureBuilt();
  // The application's folder: tokenvault installed (a link to this package, which resolves through
  // its exports to dist/) and the packages the bundle keeps external.
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-bundle-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'tokenvault'));
  for (const name of ['better-sqlite3', 'quickjs-emscripten', '@jitl']) symlinkSync(realpathSync(join(ROOT, 'node_modules', name)), join(dir, 'node_modules', name));
  copyFileSync(join(ROOT, 'test/embedding/fixtures/bundled-app.ts'), join(dir, 'app.ts'));
}, 180_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await endAdmin();
});

/** docs/bundling.md's command, through esbuild's API. */
async function bundle(out: string, options: { worker: boolean; external: string[] }): Promise<string> {
  await build({
    entryPoints: { app: './app.ts', ...(options.worker ? { 'sandbox-worker': 'tokenvault/sandbox-worker' } : {}) },
    absWorkingDir: dir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    outdir: join(dir, out),
    external: options.external,
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    logLevel: 'silent',
  });
  return join(dir, out, 'app.js');
}

/** Runs the bundle on SQLite, and on a fresh PostgreSQL schema when the suite has a server. */
async function start(app: string, env: Record<string, string> = {}): Promise<{ sqlite: Outcome; postgres?: Outcome }> {
  const sqlite = await outcome(app, env);
  if (PG_URL === undefined) return { sqlite };
  const schema = freshSchema('bundle');
  try {
    return { sqlite, postgres: await outcome(app, { ...env, PG_URL, PG_SCHEMA: schema }) };
  } finally {
    await dropSchema(schema);
  }
}

type Outcome = { code: number; stdout: string; stderr: string };
async function outcome(app: string, env: Record<string, string>): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, [app], { cwd: dir, env: { PATH: process.env.PATH ?? '', ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const EXTERNAL = ['better-sqlite3', 'pkcs11js', 'quickjs-emscripten', '@jitl/*'];
const ANSWER = JSON.stringify({ status: 200, body: { raw: { hello: 'bundle' } } });

it('a bundle with the worker beside it runs a reactor; without it, createVault names the path and the option, and the option fixes it', async () => {
  const app = await bundle('with-worker', { worker: true, external: EXTERNAL });
  for (const result of Object.values(await start(app))) expect(result.stdout.trim(), result.stderr).toBe(ANSWER);

  unlinkSync(join(dir, 'with-worker', 'sandbox-worker.js'));
  const missing = await outcome(app, {});
  expect(missing.code).not.toBe(0);
  expect(missing.stderr).toContain(
    `options.reactors.workerFile: is not set and the reactor sandbox's worker file is not where tokenvault's code expects it (${join(dir, 'with-worker', 'sandbox-worker.js')})`,
  );

  // The worker file named by the option: the package's own, self-contained.
  for (const result of Object.values(await start(app, { WORKER_FILE: join(ROOT, 'dist', 'sandbox-worker.js') }))) expect(result.stdout.trim(), result.stderr).toBe(ANSWER);
}, 120_000);

it('QuickJS bundled in (its WebAssembly left behind): a reactor gets a 503 naming the cause, and the default logger wrote it with its stack', async () => {
  const app = await bundle('quickjs-inside', { worker: true, external: ['better-sqlite3', 'pkcs11js'] });
  const { sqlite } = await start(app);
  const answer = JSON.parse(sqlite.stdout) as { status: number; body: { detail: string } };
  expect(answer.status).toBe(503);
  expect(answer.body.detail).toMatch(
    /^The reactor sandbox could not start: .*emscripten-module\.wasm.*quickjs-emscripten and @jitl\/\* must stay external \(docs\/bundling\.md\)$/,
  );
  expect(answer.body.detail).not.toMatch(/try again/);
  const logged = sqlite.stderr
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, string>);
  expect(logged).toContainEqual(
    expect.objectContaining({ level: 'error', message: 'the reactor sandbox could not start', error_message: expect.stringContaining('emscripten-module.wasm') }),
  );
  expect(logged.find((l) => l.message === 'the reactor sandbox could not start')?.stack).toMatch(/^\s+at /);
}, 120_000);
