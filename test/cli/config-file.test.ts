/**
 * `serve --config` and `tokenvault config check` (docs/configuration.md): the shipped annotated
 * example is valid and serves; every serve option is a key; flags and TOKENVAULT_<NAME> override
 * the file; each bad file is refused naming its line and key; no secret is accepted in clear.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseWithConfig } from '../../src/cli/config-file.js';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { ROOT } from '../support/ensure-built.js';
import { ADMIN_KEY, cli } from './helpers.js';

const EXAMPLE = join(ROOT, 'examples', 'tokenvault.toml');
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-config-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('the shipped example', () => {
  it('is valid, names every serve option, and serves (flags overriding its port and database)', async () => {
    const checked = await cli(['config', 'check', EXAMPLE]);
    expect(checked, checked.stderr).toMatchObject({ code: 0 });
    expect(checked.stdout).toMatch(/valid \(sets port, host, .*allow-host, access-log\)/);
    const keys = (await cli(['config', 'keys'])).stdout
      .trim()
      .split('\n')
      .map((line) => line.split(/\s+/)[0]!);
    expect(keys).toContain('tls-cert');
    const text = readFileSync(EXAMPLE, 'utf8');
    for (const key of keys) expect(text, `the example documents ${key}`).toMatch(new RegExp(`^(# )?${key} = `, 'm'));

    let health = 0;
    const served = await cli(['serve', '--config', EXAMPLE, '--port', '0', '--db', ':memory:'], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY }, async (url) => {
      health = (await fetch(`${url}/healthz`)).status;
      const apps = await fetch(`${url}/applications`, { headers: { 'SVC-API-KEY': ADMIN_KEY } });
      expect(apps.status).toBe(200);
    });
    expect(served.code, served.stderr).toBe(0);
    expect(health).toBe(200);
  });
});

describe('precedence and derivation', () => {
  it('flag over TOKENVAULT_<NAME> over file over default; lists from the environment are comma-separated', () => {
    const options = { port: { type: 'string', default: '8080' }, 'allow-host': { type: 'string', multiple: true }, 'shared-db': { type: 'boolean', default: false } } as const;
    const config = file('precedence.toml', 'port = 9000\nallow-host = ["a.example"]\nshared-db = true\n');
    const fromFile = parseWithConfig({}, { args: ['--config', config], options, strict: true });
    expect(fromFile.values).toEqual({ port: '9000', 'allow-host': ['a.example'], 'shared-db': true });
    const fromEnv = parseWithConfig(
      { TOKENVAULT_PORT: '9001', TOKENVAULT_ALLOW_HOST: 'b.example, c.example', TOKENVAULT_SHARED_DB: 'false' },
      { args: ['--config', config], options, strict: true },
    );
    expect(fromEnv.values).toEqual({ port: '9001', 'allow-host': ['b.example', 'c.example'], 'shared-db': false });
    const fromFlag = parseWithConfig({ TOKENVAULT_PORT: '9001' }, { args: ['--config', config, '--port', '9002', '--allow-host', 'd.example'], options, strict: true });
    expect(fromFlag.values).toMatchObject({ port: '9002', 'allow-host': ['d.example'] });
    expect(parseWithConfig({}, { args: [], options, strict: true }).values).toEqual({ port: '8080', 'shared-db': false });
  });

  it('an option added to the table is a config key and a variable with no other code (as --key-provider would be)', () => {
    const options = { 'key-provider': { type: 'string' } } as const;
    const config = file('added.toml', 'key-provider = "pkcs11"\n');
    expect(parseWithConfig({}, { args: ['--config', config], options, strict: true }).values).toEqual({ 'key-provider': 'pkcs11' });
    expect(parseWithConfig({ TOKENVAULT_KEY_PROVIDER: 'env' }, { args: ['--config', config], options, strict: true }).values).toEqual({ 'key-provider': 'env' });
  });

  it('a value from the environment that the option refuses names the variable', async () => {
    const result = await cli(['serve', '--db', ':memory:'], { TOKENVAULT_ACCESS_LOG: 'loud' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("TOKENVAULT_ACCESS_LOG: access-log must be 'on' or 'off'");
  });

  it('master-key-file is read (TOKENVAULT_MASTER_KEY wins when set); an unreadable one names the option', async () => {
    const keyFile = file('master.key', `${generateMasterKey()}\n`);
    const db = join(dir, 'keyed.db');
    const config = file('keyed.toml', `db = "${db}"\nport = 0\nmaster-key-file = "${keyFile}"\n`);
    const served = await cli(['serve', '--config', config], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY });
    expect(served.code, served.stderr).toBe(0);
    expect(served.stderr).not.toMatch(/generated a master key/);
    const missing = await cli(['serve', '--config', file('missing.toml', `port = 0\nmaster-key-file = "${join(dir, 'nope')}"\n`)]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/missing\.toml:2: master-key-file: cannot read .*nope \(ENOENT\)/);
  });
});

describe('refusals name the file, the line and the key', () => {
  const cases: [string, string, RegExp][] = [
    ['syntax', 'port = 8080\nhost = "unterminated\n', /syntax\.toml:2: /],
    ['unknown key', 'port = 8080\n\nlisten = "0.0.0.0"\n', /unknown key\.toml:3: listen: is not a serve option/],
    ['wrong type', 'port = 8080\nallow-private-network = "yes"\n', /wrong type\.toml:2: allow-private-network: must be true or false/],
    ['a list expected', 'allow-host = "api.example.com"\n', /a list expected\.toml:1: allow-host: must be an array/],
    ['a bad value', '# comment\nport = 70000\n', /a bad value\.toml:2: port must be a whole number from 0 to 65535/],
    ['a store conflict', 'db = "x.db"\npostgres = "postgres://u@h/db"\n', /a store conflict\.toml:1: db and --postgres cannot be combined/],
    [
      'a secret in clear',
      'port = 8080\nmaster-key = "c2VjcmV0"\n',
      /:2: master-key: secrets are not kept in the config file: name a file with master-key-file, or set the environment variable TOKENVAULT_MASTER_KEY/,
    ],
    ['a password in the URL', 'postgres = "postgres://u:hunter2@h/db"\n', /:1: postgres: the URL holds a password; .*postgres-password-file/],
    ['a table', '[server]\nport = 8080\n', /a table\.toml:1: server: (must be|is not)/],
  ];
  for (const [name, text, expected] of cases) {
    it(name, async () => {
      const path = file(`${name}.toml`, text);
      const result = await cli(['config', 'check', path]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(expected);
      expect(result.stderr).not.toContain('hunter2');
      // serve refuses it the same way, before opening anything.
      const served = await cli(['serve', '--config', path]);
      expect(served.code).toBe(2);
      expect(served.stderr).toMatch(expected);
    });
  }

  it('a missing file and a check without a file are clear', async () => {
    expect((await cli(['config', 'check', join(dir, 'absent.toml')])).stderr).toMatch(/cannot read the config file .*absent\.toml \(ENOENT\)/);
    expect((await cli(['config', 'check'])).stderr).toMatch(/config check takes one file/);
  });
});
