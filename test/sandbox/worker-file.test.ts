/**
 * The sandbox's worker file (docs/bundling.md): checked when the vault or sandbox is created, with
 * an error naming the path and the option; a worker that cannot start is a 503 naming the file and
 * the cause, never "try again".
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { createQuickJsSandbox } from '../../src/sandbox/quickjs-sandbox.js';
import { createTestVault } from '../../src/testing/index.js';

const dir = mkdtempSync(join(tmpdir(), 'tokenvault-worker-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('a workerFile that is not a file fails createVault and createQuickJsSandbox, naming the path and the option', async () => {
  const missing = join(dir, 'nowhere.js');
  const fromVault = await createTestVault({ reactors: { workerFile: missing } }).catch((e: unknown) => e);
  expect(fromVault).toBeInstanceOf(ValidationError);
  expect((fromVault as ValidationError).errors).toEqual({
    'options.reactors.workerFile': [`names ${missing}, which is not a file: give the path of tokenvault's sandbox-worker.js (docs/bundling.md)`],
  });
  const fromSandbox = await createQuickJsSandbox({ workerFile: dir }).catch((e: unknown) => e);
  expect((fromSandbox as ValidationError).errors).toEqual({
    workerFile: [`names ${dir}, which is not a file: give the path of tokenvault's sandbox-worker.js (docs/bundling.md)`],
  });
  const both = await createTestVault({ reactors: { workerFile: missing, sandbox: { check() {}, run: () => Promise.reject(new Error('unused')) } } }).catch((e: unknown) => e);
  expect(Object.keys((both as ValidationError).errors)).toEqual(['options.reactors.workerFile']);
});

it('a worker file that fails as it starts: the run gets a 503 naming the file, the cause and the option', async () => {
  const broken = join(dir, 'broken-worker.js');
  writeFileSync(broken, "throw new Error('this is not the sandbox worker');\n");
  const sandbox = await createQuickJsSandbox({ workerFile: broken, workers: { size: 1 } });
  try {
    const error = await sandbox
      .run({ code: 'module.exports = async () => ({ raw: 1 })', req: { args: null, configuration: {} }, host: { bt: null, fetch: null } })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 503 });
    expect((error as Error).message).toBe(
      `The reactor sandbox could not start a worker from ${broken}: this is not the sandbox worker (option reactors.workerFile, docs/bundling.md)`,
    );
  } finally {
    await sandbox.close();
  }
});
