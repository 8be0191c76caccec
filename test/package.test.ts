import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { DIST, ROOT, ensureBuilt } from './support/ensure-built.js';

beforeAll(() => ensureBuilt(), 180_000);

/** Imports the built package by name, as a user's app does (Node resolves the package's own name through its exports). */
const SCRIPT = `
import { createVault, ValidationError } from 'tokenvault';
import { createSqliteStore } from 'tokenvault/sqlite';
import { createPostgresStore } from 'tokenvault/postgres';
import { createTestVault } from 'tokenvault/testing';
import { createFetchHandler } from 'tokenvault/http';
import { toNodeListener } from 'tokenvault/node';
const vault = await createTestVault();
const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
const token = await vault.tokens.create(app, { type: 'card_number', data: '4242424242424242' });
const handler = createFetchHandler(vault);
const health = await handler(new Request('http://x/healthz'));
// Options are validated without connecting, with the error class the main entry exports.
let postgresOptions = 'accepted';
try { createPostgresStore({}); } catch (error) { postgresOptions = error instanceof ValidationError ? Object.keys(error.errors).join() : String(error); }
console.log(JSON.stringify({
  exports: [typeof createVault, typeof createSqliteStore, typeof createPostgresStore, typeof toNodeListener, ValidationError.name],
  postgresOptions,
  masked: (await vault.tokens.get(app, token.id)).data,
  health: health.status,
}));
await vault.close();
`;

it('is usable by name from the build, with type declarations for every entry', () => {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', SCRIPT], { cwd: ROOT, encoding: 'utf8' });
  expect(JSON.parse(out)).toEqual({
    exports: ['function', 'function', 'function', 'function', 'ValidationError'],
    postgresOptions: 'connectionString',
    masked: 'XXXXXXXXXXXX4242',
    health: 200,
  });
  for (const entry of ['index', 'sqlite', 'postgres', 'store', 'operator', 'testing', 'http', 'node', 'metrics', 'sandbox'])
    expect(existsSync(join(DIST, `${entry}.d.ts`)), entry).toBe(true);
});

it('keeps the name of every exported class and function in the build (stack traces, `constructor.name`)', () => {
  const script = `
const mismatches = [];
for (const entry of ['tokenvault', 'tokenvault/sqlite', 'tokenvault/postgres', 'tokenvault/operator', 'tokenvault/testing', 'tokenvault/http', 'tokenvault/node', 'tokenvault/metrics', 'tokenvault/sandbox']) {
  for (const [name, value] of Object.entries(await import(entry))) {
    if (typeof value === 'function' && value.name !== name) mismatches.push(entry + ': ' + name + ' is named ' + value.name);
  }
}
console.log(JSON.stringify(mismatches));
`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  expect(JSON.parse(out)).toEqual([]);
});

it('the main entry is the small public surface: no Caller minting, services, grant helpers or HTTP status tables', () => {
  const script = `
const core = await import('tokenvault');
const leaked = ['makeCaller', 'transformFor', 'coversGrants', 'intersectGrants', 'STATUS_BY_CODE', 'statusOf', 'TokenService', 'ApplicationService', 'ReactorService', 'FormulaService', 'SessionService'].filter((name) => name in core);
const elsewhere = [typeof (await import('tokenvault/testing')).makeCaller, typeof (await import('tokenvault/http')).statusOf, typeof (await import('tokenvault/testing')).storeFixtures.makeToken];
console.log(JSON.stringify({ leaked, elsewhere }));
`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  expect(JSON.parse(out)).toEqual({ leaked: [], elsewhere: ['function', 'function', 'function'] });
});

it('tokenvault/sandbox: one QuickJS sandbox shared by two vaults runs both their reactors, and stays open when they close', () => {
  const script = `
import { createQuickJsSandbox } from 'tokenvault/sandbox';
import { createTestVault } from 'tokenvault/testing';
const sandbox = await createQuickJsSandbox({ workers: { size: 1 } });
const results = [];
for (const name of ['first', 'second']) {
  const vault = await createTestVault({ reactors: { sandbox } });
  const admin = await vault.caller({ permissions: ['reactor:create', 'token:use'] });
  const reactor = await vault.reactors.create(admin, { name, code: 'module.exports = async (req) => ({ raw: { hello: req.args.who } })' });
  results.push((await vault.reactors.react(admin, reactor.id, { args: { who: name } })).raw);
  await vault.close();
}
const afterClose = await sandbox.run({ code: 'module.exports = async () => ({ raw: 1 })', req: { args: null, configuration: {} }, host: { bt: null, fetch: null } });
await sandbox.close();
console.log(JSON.stringify({ results, afterClose: afterClose.result }));
`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  expect(JSON.parse(out)).toEqual({ results: [{ hello: 'first' }, { hello: 'second' }], afterClose: { raw: 1 } });
});
