// Bench-only: `tokenvault serve --postgres` (access log off, its own schema) with
// pg-count-preload.mjs loaded, bootstrapped with an application, a card token and a reactor; and the
// statements it sent since the last reading. Shared by pg-statements.mjs and pg-async-statements.mjs.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const PRELOAD = fileURLToPath(new URL('./pg-count-preload.mjs', import.meta.url));
export const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

/** The build at `dist` serving on PostgreSQL at `pgUrl`, counting its statements into `dir`; the n-th of the run. */
export async function startCountedServe(dist, pgUrl, dir, n) {
  const adminKey = `bench-admin-${randomBytes(16).toString('hex')}`;
  const countFile = join(dir, `counts-${n}.json`);
  const schema = `tv_stmts_${process.pid}_${n}_${randomBytes(3).toString('hex')}`;
  const child = spawn(
    process.execPath,
    ['--import', PRELOAD, join(dist, 'cli.js'), 'serve', '--port', '0', '--postgres', pgUrl, '--postgres-schema', schema, '--access-log', 'off'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, TOKENVAULT_ADMIN_KEY: adminKey, TOKENVAULT_MASTER_KEY: randomBytes(32).toString('base64'), PG_COUNT_FILE: countFile },
    },
  );
  let out = '';
  let url;
  for await (const chunk of child.stdout) {
    out += chunk;
    url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
    if (url) break;
  }
  if (!url) throw new Error(`tokenvault serve did not start:\n${out}`);
  child.stdout.resume();
  const call = async (key, path, body) => {
    const response = await fetch(url + path, { method: 'POST', headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const app = await call(adminKey, '/applications', { name: 'bench', type: 'private', permissions: ['token:create', 'token:read', 'token:search', 'token:use'] });
  const token = await call(app.key, '/tokens', { type: 'card', data: CARD, deduplicate_token: false });
  const formula = await call(adminKey, '/reactor-formulas', {
    name: 'bench',
    code: 'module.exports = async function (req) { return { raw: { last4: String(req.args.card.number).slice(-4) } }; };',
    configuration: [],
    request_parameters: [{ name: 'card', type: 'object' }],
  });
  const reactor = await call(adminKey, '/reactors', { name: 'bench', formula: { id: formula.id }, configuration: {} });
  return { dist, child, url, key: app.key, tokenId: token.id, reactorId: reactor.id, countFile, schema };
}

/** The statements counted since the last call, by kind (the preload writes them on SIGUSR2). */
export async function takeCounts(server) {
  rmSync(server.countFile, { force: true });
  server.child.kill('SIGUSR2');
  while (!existsSync(server.countFile)) await sleep(5);
  await sleep(5);
  return JSON.parse(readFileSync(server.countFile, 'utf8'));
}
