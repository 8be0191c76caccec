import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../support/ensure-built.js';
import { PG_URL, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';
import { ADMIN_KEY, api, runCliProcess, startCli } from './helpers.js';

let dir: string;
beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-first-hour-'));
}, 120_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await endAdmin();
});

const KEY_LINE = /^admin API key written to (\S+) \(mode 0600\)/;
const PRINTED_KEY_LINE = /^admin API key \(shown once, store it now\): (\S+)$/;

describe('the CLI in the first hour (the built CLI as a child process)', () => {
  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const result = await runCliProcess(['--version']);
    expect(result).toMatchObject({ code: 0, stdout: `tokenvault ${version}\n` });
  });

  it('serve names the admin key file in its last line; the access log has one line per request with no key or id; --metrics-port serves /metrics', async () => {
    const db = join(dir, 'first.db');
    const cli = await startCli(['serve', '--port', '0', '--db', db, '--metrics-port', '0']);
    try {
      const lines = cli.stdout().trimEnd().split('\n');
      const printed = KEY_LINE.exec(lines.at(-1)!);
      expect(printed, cli.stdout()).not.toBeNull();
      const adminKey = readFileSync(printed![1]!, 'utf8').trim();
      const metricsUrl = /metrics on (http:\/\/\S+)/.exec(cli.stdout())![1]!;

      const app = await api(cli.url, adminKey, 'POST', '/applications', { name: 'a', type: 'private', permissions: ['token:create', 'token:read'] });
      const token = await api(cli.url, app.body.key, 'POST', '/tokens', { type: 'token', data: 'secret-value' });
      await api(cli.url, app.body.key, 'GET', `/tokens/${token.body.id}`);
      // An undeclared query parameter is a 400 naming it; its value is never logged.
      expect((await api(cli.url, app.body.key, 'GET', `/tokens/${token.body.id}?x=query-value`)).status).toBe(400);
      expect((await fetch(`${cli.url}/readyz`)).status).toBe(200);

      const scrape = await fetch(metricsUrl);
      expect(scrape.status).toBe(200);
      const text = await scrape.text();
      expect(text).toContain('tokenvault_http_requests_total{method="GET",route="/tokens/{id}",status="200"} 1');
      expect(text).toContain('tokenvault_job_queue_depth');
      expect(text).toContain('tokenvault_audit_flush_failures_total 0');
      // The API port does not serve the metrics.
      expect((await fetch(`${cli.url}/metrics`)).status).toBe(404);

      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
      const access = cli
        .stderr()
        .split('\n')
        .filter((l) => l.includes('"msg":"request"'))
        .map((l) => JSON.parse(l));
      expect(access.map((e) => `${e.method} ${e.route} ${e.status}`)).toEqual([
        'POST /applications 201',
        'POST /tokens 201',
        'GET /tokens/{id} 200',
        'GET /tokens/{id} 400',
        'GET /readyz 200',
        'GET (no route) 404',
      ]);
      expect(access[1]).toMatchObject({ application_id: app.body.id });
      for (const secret of [adminKey, app.body.key, token.body.id, 'secret-value', 'query-value']) expect(cli.stderr()).not.toContain(secret);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });

  it('recover-admin: a new management application whose key works, audited; a wrong or missing database is a clear error', async () => {
    const db = join(dir, 'recover.db');
    const cli = await startCli(['serve', '--port', '0', '--db', db], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY });
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);

    const recovered = await runCliProcess(['recover-admin', '--db', db, '--name', 'ops recovery']);
    expect(recovered.code, recovered.stderr).toBe(0);
    const key = PRINTED_KEY_LINE.exec(recovered.stdout.trimEnd().split('\n').at(-1)!)![1]!;
    expect(key).not.toBe(ADMIN_KEY);

    const again = await startCli(['serve', '--port', '0', '--db', db]);
    try {
      const apps = await api(again.url, key, 'GET', '/applications');
      expect(apps.status).toBe(200);
      const mine = apps.body.data.find((a: { name: string }) => a.name === 'ops recovery');
      expect(mine).toMatchObject({ type: 'management' });
      const logs = await api(again.url, key, 'GET', '/logs?operation=application:recover');
      expect(logs.body.data).toEqual([expect.objectContaining({ actor: 'operator', operation: 'application:recover', resource_id: mine.id })]);
      again.child.kill('SIGTERM');
      expect(await again.exited).toBe(0);
    } finally {
      if (again.child.exitCode === null) again.child.kill('SIGKILL');
    }

    const missing = await runCliProcess(['recover-admin', '--db', join(dir, 'absent.db')]);
    expect(missing).toMatchObject({ code: 1 });
    expect(missing.stderr).toContain('no database at');
    const wrongTenant = await runCliProcess(['recover-admin', '--db', db, '--tenant', 'nope']);
    expect(wrongTenant.code).toBe(1);
    expect(wrongTenant.stderr).toContain('no tenant with that id');
  });

  it.skipIf(PG_URL === undefined)('recover-admin on PostgreSQL', async () => {
    const schema = freshSchema('recover');
    const env = { TOKENVAULT_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'), TOKENVAULT_ADMIN_KEY: ADMIN_KEY };
    try {
      const cli = await startCli(['serve', '--port', '0', '--postgres', PG_URL!, '--postgres-schema', schema], env);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
      const recovered = await runCliProcess(['recover-admin', '--postgres', PG_URL!, '--postgres-schema', schema], env);
      expect(recovered.code, recovered.stderr).toBe(0);
      const key = PRINTED_KEY_LINE.exec(recovered.stdout.trimEnd().split('\n').at(-1)!)![1]!;
      const again = await startCli(['serve', '--port', '0', '--postgres', PG_URL!, '--postgres-schema', schema], env);
      try {
        expect((await api(again.url, key, 'GET', '/applications')).status).toBe(200);
        again.child.kill('SIGTERM');
        expect(await again.exited).toBe(0);
      } finally {
        if (again.child.exitCode === null) again.child.kill('SIGKILL');
      }
    } finally {
      await dropSchema(schema);
    }
  });
});
