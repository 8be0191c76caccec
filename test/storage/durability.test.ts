import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { beforeAll, describe, expect, it } from 'vitest';
import { DIST, ensureBuilt } from '../support/ensure-built.js';

beforeAll(() => ensureBuilt(), 120_000);

/** The child creates tokens and prints each acknowledged id; it is SIGKILLed mid-stream. */
const CHILD = `
const { createVault } = await import(process.env.DIST + '/index.js');
const { createSqliteStore } = await import(process.env.DIST + '/sqlite.js');
const vault = await createVault({ store: createSqliteStore({ filename: process.env.DB }), masterKey: process.env.KEY, sweepIntervalMs: 0 });
const { application } = await vault.createTenant({ name: 'kill' });
const admin = await vault.authenticate(application.key);
const app = await vault.applications.create(admin, { name: 'w', type: 'private', permissions: ['token:create', 'token:read'],
  rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }] });
process.stdout.write(JSON.stringify({ key: app.key }) + '\\n');
const caller = await vault.authenticate(app.key);
for (let i = 0; ; i++) {
  const token = await vault.tokens.create(caller, { type: 'token', data: 'value-' + i });
  process.stdout.write(JSON.stringify({ id: token.id, i }) + '\\n');
}
`;

describe('durability', () => {
  it('every acknowledged write survives a killed process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tokenvault-kill-'));
    const db = join(dir, 'vault.db');
    const key = Buffer.alloc(32, 3).toString('base64');
    try {
      const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], { env: { ...process.env, DIST, DB: db, KEY: key }, stdio: ['ignore', 'pipe', 'inherit'] });
      const acked: { id: string; i: number }[] = [];
      let apiKey = '';
      const exited = new Promise((resolve) => child.on('exit', resolve));
      for await (const line of createInterface({ input: child.stdout! })) {
        const message = JSON.parse(line) as { key?: string; id?: string; i?: number };
        if (message.key) apiKey = message.key;
        else acked.push(message as { id: string; i: number });
        if (acked.length === 200) child.kill('SIGKILL');
      }
      await exited;
      expect(acked.length).toBeGreaterThanOrEqual(200);
      const { createVault } = await import(join(DIST, 'index.js'));
      const { createSqliteStore } = await import(join(DIST, 'sqlite.js'));
      const vault = await createVault({ store: createSqliteStore({ filename: db }), masterKey: key, sweepIntervalMs: 0 });
      const caller = await vault.authenticate(apiKey);
      for (const { id, i } of acked) expect((await vault.tokens.get(caller, id)).data).toBe(`value-${i}`);
      await vault.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
