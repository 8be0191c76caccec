import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { toNodeListener } from '../../src/http/node.js';
import { createTestVault } from '../../src/testing/index.js';
import { ROOT, ensureBuilt } from '../support/ensure-built.js';
import { PG_URL, dropSchema, endAdmin } from '../support/postgres.js';

/**
 * Every ```ts and ```js block of README.md and of the docs pages listed in PAGES runs as written. Each is matched to a harness by a line
 * it contains; a block without one fails the test, so a new snippet cannot go untested. TypeScript
 * blocks run as a user's file would: written under the repository (so `import 'tokenvault'`
 * resolves through the package's exports map to dist/) and run with tsx in a fresh directory, with
 * an epilogue that prints what the test checks. The formula code runs as a reactor.
 */
/** The README and the docs its topics moved to (docs/*.md with snippets of their own have their own tests). */
const PAGES = [
  'README.md',
  'docs/testing.md',
  'docs/http-api.md',
  'docs/operations.md',
  'docs/basis-theory.md',
  'docs/security.md',
  'docs/tokens.md',
  'docs/reactors.md',
  'docs/webhooks.md',
  'docs/storage.md',
  'docs/development.md',
];
const SNIPPETS = PAGES.flatMap((page) => [...readFileSync(join(ROOT, page), 'utf8').matchAll(/^```(ts|js)\n([\s\S]*?)^```$/gm)].map((m) => ({ page, lang: m[1]!, code: m[2]! })));
const TSX = join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const MASTER_KEY = Buffer.alloc(32, 3).toString('base64');
const run = promisify(execFile);

interface Harness {
  /** A line the snippet contains. */
  marker: string;
  /** Appended to the snippet: prints one JSON line the check reads. */
  epilogue?: string;
  env?: Record<string, string>;
  skip?: string | false;
  /** Runs the snippet against a served vault: TOKENVAULT_URL, and TOKENVAULT_API_KEY with token permissions ('BT': served with `--header-prefix BT`). */
  server?: true | 'BT';
  check(printed: any, snippet: string): void | Promise<void>;
}

const HARNESSES: Harness[] = [
  {
    marker: "const { application } = await vault.createTenant({ name: 'acme' });",
    epilogue: 'console.log(JSON.stringify({ masked: masked.data, listed: listed.data.length, found: found.data.length }));',
    check: (printed) => expect(printed).toEqual({ masked: { number: 'XXXXXXXXXXXX4242' }, listed: 1, found: 1 }),
  },
  {
    marker: 'const vault = await createTestVault();',
    epilogue: 'console.log(JSON.stringify({ key: typeof app.key, now: vault.clock.now() })); await vault.close();',
    check: (printed) => expect(printed).toMatchObject({ key: 'string' }),
  },
  {
    marker: "const handler = createFetchHandler(vault, { headerPrefix: 'SVC', maxBodyBytes: 1_048_576 });",
    epilogue: `await new Promise((resolve) => server.once('listening', resolve));
const health = await fetch('http://127.0.0.1:' + server.address().port + '/healthz');
console.log(JSON.stringify({ status: health.status }));
server.close();
await vault.close();`,
    env: { PORT: '0' },
    check: (printed) => expect(printed).toEqual({ status: 200 }),
  },
  {
    marker: "const store = createPostgresStore({ connectionString: process.env.DATABASE_URL, schema: 'vault' });",
    epilogue: 'console.log(JSON.stringify({ tenants: (await store.listTenants()).length })); await vault.close();',
    env: { DATABASE_URL: PG_URL ?? '' },
    skip: PG_URL === undefined && 'set TOKENVAULT_TEST_PG_URL to run the PostgreSQL snippet',
    check: (printed) => expect(printed).toEqual({ tenants: 0 }),
  },
  {
    marker: 'const vault = await createTestVault({ store: pgStore });',
    epilogue: 'const schema = vault.store.schema; await vault.close(); console.log(JSON.stringify({ schema }));',
    env: { TEST_PG_URL: PG_URL ?? '' },
    skip: PG_URL === undefined && 'set TOKENVAULT_TEST_PG_URL to run the PostgreSQL test-vault snippet',
    check: async (printed) => {
      expect(printed.schema).toMatch(/^t_[0-9a-f]{8}$/);
      await dropSchema(printed.schema);
    },
  },
  {
    marker: 'const wh = new Webhook(process.env.TOKENVAULT_WEBHOOK_SECRET!);',
    // Signs a message as the vault does and sends it, then a forged one.
    epilogue: `await new Promise((resolve) => server.once('listening', resolve));
const url = 'http://127.0.0.1:' + server.address().port + '/';
const body = JSON.stringify({ id: 'msg_1', type: 'token.created', timestamp: new Date().toISOString(), data: {} });
const now = new Date();
const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': wh.sign('msg_1', now, body), 'content-type': 'application/json' };
const good = await fetch(url, { method: 'POST', headers, body });
const forged = await fetch(url, { method: 'POST', headers, body: body.replace('token.created', 'token.deleted') });
console.log(JSON.stringify({ good: good.status, forged: forged.status }));
server.close();`,
    env: { TOKENVAULT_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', PORT: '0' },
    check: (printed) => expect(printed).toEqual({ good: 204, forged: 400 }),
  },
  {
    marker: "import createClient from 'openapi-fetch';",
    epilogue: 'console.log(JSON.stringify({ created: created.response.status, listed: listed!.data.length, patched: patched.data!.metadata }));',
    server: true,
    check: (printed) => expect(printed).toEqual({ created: 201, listed: 1, patched: { customer: 'c-2' } }),
  },
  {
    marker: "import { BasisTheoryClient } from '@basis-theory/node-sdk';",
    epilogue: 'console.log(JSON.stringify({ created: typeof token.id, listed: page.data.length }));',
    server: 'BT',
    check: (printed) => expect(printed).toEqual({ created: 'string', listed: 1 }),
  },
  {
    marker: 'const operator = await openOperator(',
    epilogue:
      "console.log(JSON.stringify({ version, moved, tenants: (await operator.listTenants()).length, recovered: recovered.type, vaultHasKeys: 'keys' in operator.vault, handler: typeof handler })); await operator.close();",
    check: (printed) => expect(printed).toEqual({ version: 2, moved: 0, tenants: 1, recovered: 'management', vaultHasKeys: false, handler: 'function' }),
  },
  {
    marker: 'module.exports = async function (req) {',
    check: async (_printed, snippet) => runFormulaSnippet(snippet),
  },
];

let dir: string;
let work: string;
beforeAll(() => {
  ensureBuilt();
  // Under the repository, so that Node finds tokenvault's package.json (self-reference); ignored by git.
  dir = join(ROOT, 'test', '.readme-snippets');
  mkdirSync(dir, { recursive: true });
  work = mkdtempSync(join(tmpdir(), 'tokenvault-readme-'));
}, 180_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
  if (PG_URL !== undefined) {
    await dropSchema('vault');
    await endAdmin();
  }
});

describe('README and docs snippets run as written', () => {
  it('every ts/js block has a harness', () => {
    expect(SNIPPETS.length).toBeGreaterThanOrEqual(5);
    for (const { page, code } of SNIPPETS)
      expect(
        HARNESSES.filter((h) => code.includes(h.marker)),
        `${page}: ${code.slice(0, 200)}`,
      ).toHaveLength(1);
  });

  SNIPPETS.forEach(({ page, lang, code }, index) => {
    const harness = HARNESSES.find((h) => code.includes(h.marker));
    const title = `${page} block ${index + 1} (${lang}): ${code
      .split('\n')
      .find((l) => l.trim() !== '' && !l.startsWith('import') && !l.startsWith('//'))
      ?.slice(0, 70)}`;
    it.skipIf(harness === undefined || Boolean(harness.skip))(
      title,
      async () => {
        if (lang === 'js') return harness!.check(null, code);
        const file = join(dir, `snippet-${index + 1}.ts`);
        writeFileSync(file, `${code}\n${harness!.epilogue ?? ''}\n`);
        const cwd = mkdtempSync(join(work, 'run-'));
        const served = harness!.server ? await serveVault(harness!.server === 'BT' ? 'BT' : 'SVC') : undefined;
        try {
          const { stdout } = await run(process.execPath, [TSX, file], {
            cwd,
            env: { PATH: process.env.PATH, TOKENVAULT_MASTER_KEY: MASTER_KEY, ...harness!.env, ...served?.env } as NodeJS.ProcessEnv,
            encoding: 'utf8',
          });
          const last = stdout.trim().split('\n').at(-1)!;
          await harness!.check(JSON.parse(last), code);
        } finally {
          await served?.close();
        }
      },
      60_000,
    );
  });
});

/** A test vault served over HTTP on a free port, with a key holding the token permissions. */
async function serveVault(headerPrefix: string): Promise<{ env: Record<string, string>; close(): Promise<void> }> {
  const vault = await createTestVault();
  const app = await vault.caller({ permissions: ['token:create', 'token:read', 'token:update', 'token:search'] });
  const server = createServer(toNodeListener(createFetchHandler(vault, { headerPrefix })));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    env: { TOKENVAULT_URL: `http://127.0.0.1:${port}`, TOKENVAULT_API_KEY: app.key },
    close: async () => {
      server.close();
      await vault.close();
    },
  };
}

/** The formula code of the Reactors section, run as a reactor that charges a card through a local payment API. */
async function runFormulaSnippet(code: string): Promise<void> {
  const charges: unknown[] = [];
  const api = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const charge = JSON.parse(body) as { amount: number };
      charges.push(charge);
      res.writeHead(charge.amount > 1000 ? 402 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'ch_1', receipt: 'receipt-0001' }));
    });
  });
  api.listen(0, '127.0.0.1');
  await once(api, 'listening');
  const vault = await createTestVault({ reactors: { egress: { allowHosts: ['127.0.0.1'], allowPrivateNetwork: true } } });
  try {
    const appCaller = await vault.caller({
      permissions: ['token:create', 'token:read', 'token:use'],
      rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] }],
    });
    const admin = await vault.authenticate(vault.adminKey);
    const formula = await vault.formulas.create(admin, { name: 'charge', code, configuration: [{ name: 'api_url', type: 'string' }] });
    const reactor = await vault.reactors.create(admin, {
      name: 'charge',
      formula: { id: formula.id },
      configuration: { api_url: `http://127.0.0.1:${(api.address() as AddressInfo).port}` },
      application: { id: appCaller.applicationId },
    });
    const card = await vault.tokens.create(appCaller, { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 } });
    const result = await vault.reactors.react(appCaller, reactor.id, { args: { card: `{{ ${card.id} }}`, amount: 500, last4: `{{ ${card.id} | json: '$.number' | last4 }}` } });
    expect(result.raw).toEqual({ id: 'ch_1' });
    expect(result.tokens).toMatchObject({ receipt: { type: 'token' } });
    expect(charges).toEqual([{ card: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 }, amount: 500 }]);
    const declined = await vault.reactors.react(appCaller, reactor.id, { args: { card: `{{ ${card.id} }}`, amount: 5000 } }).catch((e: unknown) => e);
    expect(declined).toMatchObject({ kind: 'InvalidPaymentMethodError', status: 402 });
  } finally {
    await vault.close();
    api.close();
  }
}
