import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { toNodeListener } from '../../src/http/node.js';
import { describeEachStore } from '../support/stores.js';
import { harness } from './helpers.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLIENT_DIR = fileURLToPath(new URL('./generated-client/', import.meta.url));

/** The scenario's result (generated-client/scenario.ts, kept out of the root project: it needs api.d.ts). */
interface ScenarioModule {
  runScenario(
    baseUrl: string,
    adminKey: string,
    prefix: string,
  ): Promise<{
    tokenId: string;
    readBack: unknown;
    listedIds: string[];
    patchedMetadata: Record<string, string> | undefined;
    searchedIds: string[];
    reactorRaw: unknown;
    deletedStatus: number;
    afterDeleteStatus: number;
    mistypedFilterStatus: number;
  }>;
}

// Generated once per run: the served document, its lint and the client's type check run side by side.
let lint: Promise<{ totals: { errors: number; warnings: number }; problems: unknown[] }>;
let typecheck: Promise<{ code: number; output: string }>;
let tmp: string;

beforeAll(async () => {
  const h = await harness();
  const doc = (await h.call('GET', '/openapi.json')).body;
  await h.vault.close();
  tmp = mkdtempSync(join(tmpdir(), 'tokenvault-openapi-'));
  const file = join(tmp, 'openapi.json');
  writeFileSync(file, JSON.stringify(doc));
  lint = run(process.execPath, [join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'), 'lint', file, '--extends=recommended', '--format=json'], {
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', CI: 'true' },
  })
    .then(({ stdout }) => stdout)
    .catch((error: { stdout?: string }) => error.stdout ?? '')
    .then((stdout) => JSON.parse(stdout));
  writeFileSync(join(CLIENT_DIR, 'api.d.ts'), astToString(await openapiTS(doc)));
  typecheck = run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', CLIENT_DIR]).then(
    ({ stdout }) => ({ code: 0, output: stdout }),
    (error: { code?: number; stdout?: string }) => ({ code: error.code ?? 1, output: error.stdout ?? String(error) }),
  );
});
afterAll(async () => {
  await Promise.allSettled([lint, typecheck]);
  rmSync(tmp, { recursive: true, force: true });
});

describe('the served OpenAPI document', () => {
  it('passes redocly lint with the recommended rules: 0 errors', async () => {
    const result = await lint;
    expect(result.problems.filter((p) => (p as { severity: string }).severity === 'error')).toEqual([]);
    expect(result.totals.errors).toBe(0);
  });

  it('a client generated with openapi-typescript and written with openapi-fetch type-checks without casts', async () => {
    const { code, output } = await typecheck;
    expect(output).toBe('');
    expect(code).toBe(0);
  });
});

describeEachStore('the generated client against the real server', (store) => {
  it('creates an application and a token, reads, lists by metadata, patches, searches, reacts and deletes', async () => {
    const vault = await store.vault();
    const server = createServer(toNodeListener(createFetchHandler(vault)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const { runScenario } = (await import(pathToFileURL(join(CLIENT_DIR, 'scenario.ts')).href)) as ScenarioModule;
      const result = await runScenario(`http://127.0.0.1:${port}`, vault.adminKey, 'SVC');
      expect(result.readBack).toEqual({ email: 'ada@example.com' });
      expect(result.listedIds).toEqual([result.tokenId]);
      expect(result.patchedMetadata).toEqual({ customer: 'c-2' });
      expect(result.searchedIds).toEqual([result.tokenId]);
      expect(result.reactorRaw).toEqual({ email: 'ada@example.com', greeting: 'hello' });
      expect(result.mistypedFilterStatus).toBe(400);
      expect(result.deletedStatus).toBe(204);
      expect(result.afterDeleteStatus).toBe(404);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
