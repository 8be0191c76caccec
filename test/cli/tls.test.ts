/**
 * `serve --tls-cert --tls-key` (docs/production.md, TLS): a self-signed certificate made at test
 * time; the Basis Theory SDK and a plain `fetch` (a child node trusting the certificate) work over
 * HTTPS, plain HTTP to the port gets a 400 saying so, TLS below 1.2 is refused, and SIGHUP loads a
 * renewed certificate for new connections while an open connection keeps working.
 */
import { BasisTheory } from '@basis-theory/basis-theory-js';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, globalAgent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { connect } from 'node:tls';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../../src/cli.js';
import { ADMIN_KEY } from './helpers.js';

const execFileAsync = promisify(execFile);
let dir: string;
let cert: string;
let key: string;
/** The renewal, made before the server starts (openssl blocks this process, which runs the server). */
let renewed: { cert: string; key: string };
let url: string;
let stderr = '';
const controller = new AbortController();
let served: Promise<number>;

/** A self-signed certificate for localhost, 127.0.0.1 and ::1, written to `<name>.pem` / `<name>.key`. */
function selfSigned(name: string): { cert: string; key: string } {
  const paths = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
      '-keyout',
      paths.key,
      '-out',
      paths.cert,
    ],
    { stdio: 'ignore' },
  );
  return paths;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-tls-'));
  ({ cert, key } = selfSigned('first'));
  renewed = selfSigned('second');
  let listening: (url: string) => void;
  const started = new Promise<string>((resolve) => (listening = resolve));
  served = runCli(['serve', '--port', '0', '--host', '127.0.0.1', '--db', ':memory:', '--header-prefix', 'BT', '--access-log', 'off', '--tls-cert', cert, '--tls-key', key], {
    env: { TOKENVAULT_ADMIN_KEY: ADMIN_KEY },
    stdout: () => undefined,
    stderr: (text) => (stderr += text),
    signal: controller.signal,
    onListening: (u) => listening(u),
  });
  void served.then(() => listening(''));
  url = await started;
  if (url === '') throw new Error(`serve exited:\n${stderr}`);
});

afterAll(async () => {
  controller.abort();
  expect(await served).toBe(0);
  rmSync(dir, { recursive: true, force: true });
});

/** One HTTPS request trusting `ca`; `agent` keeps its connection for the next. */
function call(
  path: string,
  options: { ca: string; agent?: Agent; method?: string; body?: unknown; apiKey?: string },
): Promise<{ status: number; body: any; fingerprint: string; port: number; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, url), {
      method: options.method ?? 'GET',
      ca: options.ca,
      // A fresh agent unless one is given: no connection or TLS session carried over from another call.
      agent: options.agent ?? new Agent({ maxCachedSessions: 0 }),
      headers: { ...(options.apiKey ? { 'BT-API-KEY': options.apiKey } : {}), ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) },
    });
    req.on('response', (res) => {
      const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerX509Certificate()?.fingerprint256 ?? '';
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      const port = res.socket.localPort ?? 0;
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text === '' ? null : JSON.parse(text), fingerprint, port, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end(options.body === undefined ? undefined : JSON.stringify(options.body));
  });
}

it('the BT SDK and an HTTPS fetch work; plain HTTP to the port gets a 400 naming HTTPS; TLS 1.1 is refused', async () => {
  expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  // Not 'localhost': for that name the SDK switches to http.
  const base = url;
  const ca = readFileSync(cert, 'utf8');
  const app = await call('/applications', {
    ca,
    method: 'POST',
    apiKey: ADMIN_KEY,
    body: {
      name: 'sdk',
      type: 'private',
      permissions: ['token:create', 'token:read'],
      rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
    },
  });
  expect(app.status).toBe(201);

  // The SDK's http client uses the global https agent: it trusts the test certificate for this test.
  const before = globalAgent.options.ca;
  globalAgent.options.ca = ca;
  try {
    const bt = await new BasisTheory().init(app.body.key, { apiBaseUrl: base, disableTelemetry: true });
    const created = await bt.tokens.create({ type: 'token', data: 'over-tls' });
    expect((await bt.tokens.retrieve(created.id)).data).toBe('over-tls');
  } finally {
    globalAgent.options.ca = before;
  }

  // A child process: the server runs in this one, so the call must not block it.
  const { stdout: fetched } = await execFileAsync(process.execPath, ['-e', `fetch(process.argv[1]).then(async (r) => console.log(r.status, await r.text()))`, `${base}/healthz`], {
    env: { PATH: process.env.PATH, NODE_EXTRA_CA_CERTS: cert },
    encoding: 'utf8',
  });
  expect(fetched).toMatch(/^200 /);

  const plain = await fetch(`${base.replace('https:', 'http:')}/healthz`);
  expect(plain.status).toBe(400);
  expect(await plain.text()).toMatch(/serves HTTPS only: use https:\/\//);

  const old = connect({ host: '127.0.0.1', port: Number(new URL(base).port), ca, maxVersion: 'TLSv1.1', minVersion: 'TLSv1' });
  const [error] = (await once(old, 'error')) as [NodeJS.ErrnoException];
  expect(error.code).toMatch(/ERR_SSL|ECONNRESET/);
});

it('SIGHUP loads a renewed certificate for new connections; an open connection keeps serving; a broken renewal keeps the old pair', async () => {
  const first = readFileSync(cert, 'utf8');
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const before = await call('/healthz', { ca: first, agent });
    expect(before.status).toBe(200);
    // The renewal replaces the files in place, as certbot or cert-manager do.
    copyFileSync(renewed.cert, cert);
    copyFileSync(renewed.key, key);
    const reloaded = new Promise<void>((resolve) => {
      const check = () => (stderr.includes('TLS certificate reloaded') ? resolve() : setImmediate(check));
      check();
    });
    process.emit('SIGHUP');
    await reloaded;
    // The kept-alive connection still answers, on its first certificate.
    const kept = await call('/healthz', { ca: first, agent });
    expect(kept).toMatchObject({ status: 200, reused: true, port: before.port });
    const fresh = await call('/healthz', { ca: readFileSync(cert, 'utf8') });
    expect(fresh.status).toBe(200);
    expect(fresh.fingerprint).toBe(new X509Certificate(readFileSync(cert)).fingerprint256);
    expect(fresh.fingerprint).not.toBe(before.fingerprint);

    writeFileSync(key, 'not a key');
    process.emit('SIGHUP');
    expect(stderr).toContain('TLS certificate reload failed; the previous certificate stays in use');
    expect((await call('/healthz', { ca: readFileSync(cert, 'utf8') })).status).toBe(200);
  } finally {
    agent.destroy();
  }
});
