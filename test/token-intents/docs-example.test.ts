import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ROOT, ensureBuilt } from '../support/ensure-built.js';

/**
 * The example of docs/token-intents.md runs as written: its ```ts block, written under the
 * repository (so `tokenvault/testing` resolves through the package's exports map to dist/), run
 * with tsx, with an epilogue that prints what this test checks.
 */
const DOC = readFileSync(join(ROOT, 'docs', 'token-intents.md'), 'utf8');
const BLOCKS = [...DOC.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
const TSX = join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const EPILOGUE = `
console.log(JSON.stringify({ card: intent.card, fingerprint: typeof summary.fingerprint, data: token.data, metadata: token.metadata, again, id: intent.id }));
await vault.close();`;

let dir: string;
let work: string;
beforeAll(() => {
  ensureBuilt();
  dir = join(ROOT, 'test', '.token-intents-docs');
  mkdirSync(dir, { recursive: true });
  work = mkdtempSync(join(tmpdir(), 'tokenvault-intents-doc-'));
}, 180_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

it('docs/token-intents.md: its one ts block runs as written', async () => {
  expect(BLOCKS).toHaveLength(1);
  const file = join(dir, 'example.ts');
  writeFileSync(file, `${BLOCKS[0]}\n${EPILOGUE}\n`);
  const { stdout } = await promisify(execFile)(process.execPath, [TSX, file], { cwd: work, env: { PATH: process.env.PATH } as NodeJS.ProcessEnv, encoding: 'utf8' });
  const printed = JSON.parse(stdout.trim().split('\n').at(-1)!);
  expect(printed).toEqual({
    card: { bin: '424242', last4: '4242', brand: 'visa', funding: 'unknown', expiration_month: 12, expiration_year: 2031 },
    fingerprint: 'string',
    data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' },
    metadata: { order: '1001' },
    again: `Token intent '${printed.id}' not found`,
    id: printed.id,
  });
}, 120_000);
