import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { reactorMaySetHeader } from '../../src/http/reactor-response.js';
import { describeEachStore, type TestStore } from '../support/stores.js';
import { BASE, read } from './helpers.js';

/** Headers reactor code must not set on the vault's origin, with the value it tries. */
const HOSTILE: Record<string, string> = {
  'Set-Cookie': 'session=attacker; Path=/',
  Location: 'https://evil.example/',
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Credentials': 'true',
  'Cache-Control': 'public, max-age=86400',
  'Content-Type': 'text/html',
  'Content-Security-Policy': 'default-src *',
  'Strict-Transport-Security': 'max-age=0',
  'WWW-Authenticate': 'Basic realm="vault"',
  Vary: 'Origin',
  Refresh: '0; url=https://evil.example/',
  Link: '<https://evil.example/>; rel=preload',
  'X-Frame-Options': 'ALLOWALL',
  'X-Content-Type-Options': 'none',
  'X-Accel-Redirect': '/internal/secrets',
  'X-Forwarded-Host': 'evil.example',
  'SVC-Idempotent-Replayed': 'true',
};

function headersOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

async function setup(store: TestStore) {
  const vault = await store.vault();
  const handler = createFetchHandler(vault);
  const user = await vault.caller({ permissions: ['token:use'] });
  const call = async (method: string, path: string, key: string, body?: unknown) =>
    read(
      await handler(
        new Request(BASE + path, {
          method,
          headers: { 'SVC-API-KEY': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      ),
    );
  /** Creates a reactor throwing CustomHttpResponseError(spec) and invokes it. */
  const respond = async (spec: Record<string, unknown>) => {
    const code = `module.exports = () => { throw new CustomHttpResponseError(${JSON.stringify(spec)}); }`;
    const formula = await call('POST', '/reactor-formulas', vault.adminKey, { name: 'custom', code });
    const reactor = await call('POST', '/reactors', vault.adminKey, { name: 'custom', formula: { id: formula.body.id }, configuration: {} });
    return call('POST', `/reactors/${reactor.body.id}/react`, user.key);
  };
  return { respond };
}

describeEachStore('headers of a reactor’s custom response', (store) => {
  it('keeps retry-after and harmless x- headers; drops every security-relevant header; keeps no-store and the JSON content type', async () => {
    const { respond } = await setup(store);
    const sent = await respond({ status: 429, headers: { ...HOSTILE, 'Retry-After': '30', 'X-Request-Id': 'abc', 'X-Teapot': 'yes' }, body: { slow: 'down' } });
    expect(sent.status).toBe(429);
    expect(sent.body).toEqual({ slow: 'down' });
    const headers = headersOf(sent.headers);
    expect(headers).toEqual({ 'cache-control': 'no-store', 'content-type': 'application/json', 'retry-after': '30', 'x-request-id': 'abc', 'x-teapot': 'yes' });
  });

  it('a response without a body keeps cache-control: no-store and sets nothing else the reactor asked for', async () => {
    const { respond } = await setup(store);
    const sent = await respond({ status: 204, headers: HOSTILE });
    expect(sent.status).toBe(204);
    expect(headersOf(sent.headers)).toEqual({ 'cache-control': 'no-store' });
  });

  it('bounds the number and size of reactor headers', async () => {
    const { respond } = await setup(store);
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`X-H${i}`, String(i)]));
    const sent = await respond({ status: 200, headers: { 'X-Big': 'a'.repeat(2000), ...many }, body: null });
    const names = Object.keys(headersOf(sent.headers)).filter((n) => n.startsWith('x-'));
    expect(names).toHaveLength(32);
    expect(sent.headers.get('x-big')).toBeNull();
  });
});

it('reactorMaySetHeader: the allow-list', () => {
  for (const name of ['retry-after', 'x-request-id', 'x-ratelimit-remaining', 'x-psp-decline-code']) expect(reactorMaySetHeader(name, 'SVC')).toBe(true);
  for (const name of [
    'set-cookie',
    'location',
    'access-control-allow-origin',
    'cache-control',
    'content-type',
    'content-length',
    'transfer-encoding',
    'connection',
    'strict-transport-security',
    'content-security-policy',
    'www-authenticate',
    'vary',
    'x-frame-options',
    'x-forwarded-for',
    'x-accel-redirect',
    'x-sendfile',
    'svc-idempotent-replayed',
    'etag',
    'expires',
    'pragma',
    'refresh',
    'link',
  ]) {
    expect(reactorMaySetHeader(name, 'SVC')).toBe(false);
  }
  expect(reactorMaySetHeader('x-vault-idempotent-replayed', 'X-Vault')).toBe(false);
});
