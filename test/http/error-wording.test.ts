import { describe, expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { jsonErrorOffset } from '../../src/http/json-position.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { PRIVATE_PERMISSIONS, VISA } from './helpers.js';

/** valibot's wording (and V8's JSON.parse wording, which quotes the input): never in a response. */
const FOREIGN = /Expected|Received|Invalid key|Invalid type|Invalid length|Invalid value|is not valid JSON$|Unexpected token/;

interface Sent {
  status: number;
  body: any;
}

async function setup(vault: TestVault) {
  const handler = createFetchHandler(vault);
  const user = await vault.caller({ permissions: PRIVATE_PERMISSIONS });
  const send = async (method: string, path: string, body?: unknown, key: string | null = user.key, contentType?: string): Promise<Sent> => {
    const headers = new Headers();
    if (key !== null) headers.set('SVC-API-KEY', key);
    if (body !== undefined) headers.set('content-type', contentType ?? (method === 'PATCH' ? 'application/merge-patch+json' : 'application/json'));
    const response = await handler(
      new Request(`http://vault.test${path}`, { method, headers, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) }),
    );
    const text = await response.text();
    return { status: response.status, body: text === '' ? null : JSON.parse(text) };
  };
  return { send, user, admin: vault.adminKey };
}

/** Every message of a problem document: its detail and each field's messages. */
function messages(body: any): string[] {
  return [body.detail, ...Object.entries(body.errors ?? {}).flatMap(([field, list]) => [field, ...(list as string[])])];
}

describeEachStore('error messages in our words', (store) => {
  it("a battery of bad inputs across routes: each a 4xx, none in the validation library's wording, paths like data.number and permissions[0]", async () => {
    const vault = await store.vault();
    const { send, admin } = await setup(vault);
    const token = await send('POST', '/tokens', { type: 'card', data: VISA });
    expect(token.status).toBe(201);
    const formula = await send(
      'POST',
      '/reactor-formulas',
      { name: 'f', code: 'module.exports = async () => ({ raw: 1 })', configuration: [{ name: 'url', type: 'string' }], request_parameters: [{ name: 'card', type: 'object' }] },
      admin,
    );
    expect(formula.status).toBe(201);
    const reactor = await send('POST', '/reactors', { name: 'r', formula: { id: formula.body.id }, configuration: { url: 'x' } }, admin);
    expect(reactor.status).toBe(201);
    const app = await send('POST', '/applications', { name: 'a', type: 'private', permissions: ['token:read'] }, admin);
    expect(app.status).toBe(201);

    const battery: [string, string, unknown, string | null][] = [
      ['POST', '/tokens', {}, null],
      ['POST', '/tokens', { type: 5, data: 1 }, null],
      ['POST', '/tokens', { type: 'card', data: { number: 5 } }, null],
      ['POST', '/tokens', { type: 'card', data: { number: '4242424242424242', colour: 'red' } }, null],
      ['POST', '/tokens', { type: 'token', data: 'x', colour: 'red' }, null],
      ['POST', '/tokens', { type: 'token', data: 'x', containers: 5, metadata: [1], expires_at: 'soon', search_indexes: 'x', deduplicate_token: 'yes' }, null],
      ['POST', '/tokens', [], null],
      ['POST', '/tokens', '{"type": "token", "data": ', null],
      ['POST', '/tokens', 'abc', null],
      ['PATCH', `/tokens/${token.body.id}`, { id: 'x', metadata: 5, data: { number: true } }, null],
      ['POST', '/tokens/search', { query: 5, size: 'x', colour: 1 }, null],
      ['GET', '/tokens?size=abc&page=0', undefined, null],
      ['GET', '/tokens?start=', undefined, null],
      ['POST', '/tokenize', 'nope', null],
      ['POST', '/applications', {}, admin],
      ['POST', '/applications', { name: 5, type: 'superuser', colour: 1 }, admin],
      ['POST', '/applications', { name: 'a', type: 'private', permissions: ['token:fly', 5] }, admin],
      ['POST', '/applications', { name: 'a', type: 'private', rules: [{}, { priority: 'x', container: 5, transform: 'show', permissions: [] }] }, admin],
      ['PUT', `/applications/${app.body.id}`, { type: 'public' }, admin],
      ['PUT', `/applications/${app.body.id}`, { permissions: 'all' }, admin],
      ['POST', '/reactor-formulas', {}, admin],
      ['POST', '/reactor-formulas', { name: 1, code: 2, configuration: 'x', request_parameters: [{ name: 'a', type: 'date', optional: 'no' }] }, admin],
      ['POST', '/reactors', {}, admin],
      ['POST', '/reactors', { name: 'r', formula: 'x', configuration: 5, application: 7 }, admin],
      ['POST', '/reactors', { name: 'r', formula: { id: formula.body.id }, configuration: { url: 'x', extra: 1 } }, admin],
      ['PUT', `/reactors/${reactor.body.id}`, { name: 5 }, admin],
      ['POST', `/reactors/${reactor.body.id}/react`, { args: { card: 5 }, colour: 2, timeout_ms: 'x' }, null],
      ['GET', '/logs?size=x', undefined, admin],
      ['GET', '/tokens', undefined, 'not-a-key'],
    ];
    for (const [method, path, body, key] of battery) {
      const sent = await send(method, path, body, key ?? undefined);
      const what = `${method} ${path} ${JSON.stringify(body)} → ${JSON.stringify(sent.body)}`;
      expect(sent.status, what).toBeGreaterThanOrEqual(400);
      expect(sent.status, what).toBeLessThan(500);
      for (const message of messages(sent.body)) expect(message, what).not.toMatch(FOREIGN);
      // One path style: dots for keys, brackets for indexes.
      for (const field of Object.keys(sent.body.errors ?? {})) expect(field, what).not.toMatch(/\.\d+(\.|$)/);
    }
  });

  it('unknown fields name the accepted ones; an unknown permission lists the valid ones; undeclared configuration names the declared', async () => {
    const vault = await store.vault();
    const { send, admin } = await setup(vault);
    const unknown = await send('POST', '/applications', { name: 'a', type: 'private', colour: 'red' }, admin);
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors.colour).toEqual(['is not an accepted field (accepted: name, type, permissions, rules, allowed_origins)']);

    const permission = await send(
      'POST',
      '/applications',
      { name: 'a', type: 'private', permissions: ['token:read', 'token:fly'], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['nope'] }] },
      admin,
    );
    expect(permission.status).toBe(400);
    expect(permission.body.errors['permissions[1]'][0]).toMatch(
      /^is not a known permission; valid permissions: token:create, token:read, .*log:read, webhook:create.*webhook:delete, proxy:invoke, proxy:create, proxy:read, proxy:update, proxy:delete$/,
    );
    expect(permission.body.errors['rules[0].permissions[0]'][0]).toMatch(/^is not a known permission; valid permissions: /);

    const missing = await send('POST', '/applications', { type: 'private' }, admin);
    expect(missing.body.errors).toEqual({ name: ['is required'] });
    const wrongType = await send('POST', '/reactor-formulas', { name: 1, code: 'module.exports = async () => 1' }, admin);
    expect(wrongType.body.errors.name).toEqual(['must be a string']);

    const formula = await send(
      'POST',
      '/reactor-formulas',
      {
        name: 'f',
        code: 'module.exports = async () => ({ raw: 1 })',
        configuration: [
          { name: 'url', type: 'string' },
          { name: 'region', type: 'string' },
        ],
      },
      admin,
    );
    const reactor = await send('POST', '/reactors', { name: 'r', formula: { id: formula.body.id }, configuration: { url: 'x', region: 'eu', api_key: 'k' } }, admin);
    expect(reactor.status).toBe(400);
    expect(reactor.body.errors['configuration.api_key']).toEqual(['is not declared by the formula (declared: url, region)']);

    const tokenField = await send('POST', '/tokens', { type: 'card', data: { number: 42 } });
    expect(Object.keys(tokenField.body.errors)).toEqual(['data.number']);
  });

  it('a 401 names the header it expected; malformed JSON gives its position and never quotes the body', async () => {
    const vault = await store.vault();
    const { send } = await setup(vault);
    const none = await send('GET', '/tokens', undefined, null);
    expect(none.status).toBe(401);
    expect(none.body.detail).toBe("An API key is required: send the application's key in the SVC-API-KEY header");
    const wrong = await send('GET', '/tokens', undefined, 'wrong-key');
    expect(wrong.status).toBe(401);
    expect(wrong.body.detail).toContain('SVC-API-KEY header');
    const bt = createFetchHandler(vault, { headerPrefix: 'BT' });
    const btResponse = await bt(new Request('http://vault.test/tokens'));
    expect(((await btResponse.json()) as { detail: string }).detail).toContain('BT-API-KEY header');

    const cut = await send('POST', '/tokens', '{"type": "token", "data": ');
    expect(cut.status).toBe(400);
    expect(cut.body.errors.body).toEqual(['is not valid JSON: it ends before the document is complete (offset 26)']);
    const secret = await send('POST', '/tokens', '{"type": "token",\n  "data": s3cr3t-value}');
    expect(secret.body.errors.body).toEqual(['is not valid JSON: unexpected character at line 2, column 11 (offset 28)']);
    expect(JSON.stringify(secret.body)).not.toContain('s3cr3t');
  });

  it("a 403 on containers the caller sent names the container; a stored token's containers stay unnamed", async () => {
    const vault = await store.vault();
    const { send } = await setup(vault);
    const limited = await vault.caller({
      permissions: ['token:create', 'token:read', 'token:update'],
      rules: [{ priority: 0, container: '/general/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update'] }],
    });
    const refused = await send('POST', '/tokens', { type: 'token', data: 'x', containers: ['/general/', '/pci/high/'] }, limited.key);
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain("on container '/pci/high/'");
    const mine = await send('POST', '/tokens', { type: 'token', data: 'x', containers: ['/general/'] }, limited.key);
    const moved = await send('PATCH', `/tokens/${mine.body.id}`, { containers: ['/pci/'] }, limited.key);
    expect(moved.status).toBe(403);
    expect(moved.body.detail).toContain("on container '/pci/'");
    const other = await send('POST', '/tokens', { type: 'token', data: 'x', containers: ['/secret/area/'] });
    // A token it holds no grant on is not found; one it may read but not update is a 403 without its containers.
    const read = await send('GET', `/tokens/${other.body.id}`, undefined, limited.key);
    expect(read.status).toBe(404);
    expect(read.body.detail).not.toContain('/secret/');
    const reader = await vault.caller({
      permissions: ['token:read', 'token:update'],
      rules: [
        { priority: 0, container: '/general/', transform: 'reveal', permissions: ['token:update'] },
        { priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] },
      ],
    });
    const update = await send('PATCH', `/tokens/${other.body.id}`, { metadata: { k: 'v' } }, reader.key);
    expect(update.status).toBe(403);
    expect(update.body.detail).not.toContain('/secret/');
  });
});

describe('jsonErrorOffset', () => {
  it('finds where a JSON text goes wrong, and -1 for valid JSON', () => {
    expect(jsonErrorOffset('{"a": [1, 2.5e3, true, null, "x\\u00e9"]}')).toBe(-1);
    expect(jsonErrorOffset('  []  ')).toBe(-1);
    expect(jsonErrorOffset('{"a" 1}')).toBe(5);
    expect(jsonErrorOffset('{"a":1,}')).toBe(7);
    expect(jsonErrorOffset('[1,2')).toBe(4);
    expect(jsonErrorOffset('{"a":1}x')).toBe(7);
    expect(jsonErrorOffset('"\\q"')).toBe(1);
    expect(jsonErrorOffset('01')).toBe(1);
    expect(jsonErrorOffset('')).toBe(0);
    expect(jsonErrorOffset('[tru]')).toBe(1);
  });
});
