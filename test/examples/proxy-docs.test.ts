// Every ```ts block of docs/proxies.md runs as written (as a user's file: `import 'tokenvault'`
// resolves to dist/), with an epilogue that prints what the test checks. A block without a harness
// fails, so a new snippet cannot go untested.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, ensureBuilt } from '../support/ensure-built.js';

const DOC = readFileSync(join(ROOT, 'docs', 'proxies.md'), 'utf8');
const SNIPPETS = [...DOC.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
const TSX = join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const run = promisify(execFile);

const HARNESSES: { marker: string; epilogue: string; check(printed: any): void }[] = [
  {
    marker: 'const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/proxy/v1/charges`, {',
    epilogue:
      "console.log(JSON.stringify({ status: response.status, destination: response.headers.get('BT-PROXY-DESTINATION-STATUS'), charge })); server.close(); api.close(); await vault.close();",
    check: (printed) => expect(printed).toEqual({ status: 201, destination: '201', charge: { id: 'ch_1', charged: '4242', auth: 'Bearer sk_test_123' } }),
  },
  {
    marker: "url: 'https://kyc.example.com',",
    epilogue: 'console.log(JSON.stringify({ status: answer.status, body: new TextDecoder().decode(answer.body), sent })); await vault.close();',
    check: (printed) => expect(printed).toEqual({ status: 200, body: '{"status":"verified"}', sent: [{ url: 'https://kyc.example.com/verify', body: '{"ssn":"123-45-6789"}' }] }),
  },
  {
    marker: "name: 'Charges',",
    epilogue:
      "console.log(JSON.stringify({ shown: created.key?.startsWith('tvp_'), key: read.key ?? null, configuration: read.configuration, transforms: read.request_transforms })); await vault.close();",
    check: (printed) =>
      expect(printed).toEqual({
        shown: true,
        key: null,
        configuration: { API_KEY: '********' },
        transforms: [{ type: 'code', code: 'module.exports = async (req) => ({ headers: req.args.headers, body: req.args.body })', options: { runtime: { image: 'node-bt' } } }],
      }),
  },
  {
    marker: "name: 'Card intake',",
    epilogue:
      'console.log(JSON.stringify({ status: response.status, order, isToken: order.card === token.id, last4: (token.data as { number: string }).number.slice(-4) })); server.close(); backend.close(); await vault.close();',
    check: (printed) => {
      expect(printed).toMatchObject({ status: 200, order: { order: 'o-17' }, isToken: true, last4: '4242' });
      expect(JSON.stringify(printed.order)).not.toContain('4242424242424242');
    },
  },
];

let dir: string;
let work: string;
beforeAll(() => {
  ensureBuilt();
  dir = join(ROOT, 'test', '.proxy-doc-snippets');
  mkdirSync(dir, { recursive: true });
  work = mkdtempSync(join(tmpdir(), 'tokenvault-proxy-doc-'));
}, 180_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

describe('docs/proxies.md snippets run as written', () => {
  it('every ts block has a harness', () => {
    expect(SNIPPETS).toHaveLength(HARNESSES.length);
    for (const code of SNIPPETS)
      expect(
        HARNESSES.filter((h) => code.includes(h.marker)),
        code.slice(0, 200),
      ).toHaveLength(1);
  });

  SNIPPETS.forEach((code, index) => {
    const harness = HARNESSES.find((h) => code.includes(h.marker));
    it.skipIf(harness === undefined)(
      `block ${index + 1}`,
      async () => {
        const file = join(dir, `snippet-${index + 1}.ts`);
        writeFileSync(file, `${code}\n${harness!.epilogue}\n`);
        const { stdout } = await run(process.execPath, [TSX, file], {
          cwd: mkdtempSync(join(work, 'run-')),
          env: { PATH: process.env.PATH } as NodeJS.ProcessEnv,
          encoding: 'utf8',
        });
        harness!.check(JSON.parse(stdout.trim().split('\n').at(-1)!));
      },
      60_000,
    );
  });
});
