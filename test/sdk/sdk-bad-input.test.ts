import { expect, it } from 'vitest';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import { MAX_DETOKENIZED_TOKENS } from '../../src/tokens/detokenize.js';
import { describeEachStore } from '../support/stores.js';
import { type SdkServer, startSdkServer } from './harness.js';

/** Every bad input of the endpoints this SDK work added: a 4xx with a clear message, and nothing changed. */
const PRIVATE: Permission[] = [
  'token:create',
  'token:read',
  'token:update',
  'token:delete',
  'token:search',
  'token:use',
  'reactor:create',
  'reactor:read',
  'reactor:update',
  'reactor:delete',
];
const REVEAL_ALL: AccessRule[] = [{ description: 'everything', priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] }];
const CODE = 'module.exports = async (req) => ({ raw: req.configuration })';

async function problem(server: SdkServer, status: number, method: string, path: string, options: Parameters<SdkServer['raw']>[2]): Promise<any> {
  const sent = await server.raw(method, path, options);
  expect(sent.status, `${method} ${path} ${JSON.stringify(options?.body)}: ${JSON.stringify(sent.body)}`).toBe(status);
  expect(sent.headers.get('content-type')).toBe('application/problem+json');
  return sent.body;
}

describeEachStore('bad input to the Basis Theory SDK surface', (store) => {
  it('creating an inline-code reactor: formula and code, neither, code that cannot run, bad configuration', async () => {
    const server = await startSdkServer(store);
    const key = await server.key({ permissions: PRIVATE });
    const create = (body: unknown, status = 400) => problem(server, status, 'POST', '/reactors/', { key, body });
    expect((await create({ name: 'r', code: CODE, formula: { id: 'f' } })).errors).toEqual({
      code: ['cannot be given with formula: a reactor runs either a formula’s code or its own'],
    });
    expect((await create({ name: 'r' })).errors).toEqual({ code: ['is required (the reactor’s JavaScript), unless formula.id names a formula to run'] });
    expect((await create({ name: 'r', code: '' })).errors).toEqual({ code: ['is required'] });
    expect((await create({ name: 'r', code: 42 })).errors).toEqual({ code: ['must be a string of JavaScript'] });
    expect((await create({ name: 'r', code: 'module.exports = 5' })).errors).toEqual({
      code: ['must set module.exports to a function, e.g. module.exports = async function (req) { ... } (it is number)'],
    });
    expect((await create({ name: 'r', code: '// nothing' })).errors.code[0]).toMatch(/must set module\.exports to a function.*\(it is object\)$/);
    expect((await create({ name: 'r', code: 'exports = () => 1' })).errors.code[0]).toMatch(/must set module\.exports to a function/);
    expect((await create({ name: 'r', code: 'throw new Error("boom")' })).errors).toEqual({ code: ['fails when it is loaded: boom (line 1)'] });
    expect((await create({ name: 'r', code: 'for (;;) {}' })).errors.code[0]).toMatch(/^fails when it is loaded: Reactor exceeded its time limit of 1000 ms/);
    expect((await create({ name: 'r', code: 'module.exports = () => 1;\nlet x = ;' })).errors.code[0]).toMatch(/^SyntaxError: .* \(line 2\)$/);
    expect((await create({ name: 'r', code: CODE, configuration: { KEY: { nested: true } } })).errors).toEqual({
      'configuration.KEY': ['must be a string (at most 4096 characters), a number or a boolean'],
    });
    expect((await create({ name: 'r', code: CODE, configuration: ['a'] })).errors).toEqual({ configuration: ['must be an object of configuration names and values'] });
    expect((await create({ name: 'r', code: CODE, colour: 'blue' })).errors).toHaveProperty(['colour']);
    // A formula's reactor still needs its configuration (docs/reactors.md).
    const formula = (await server.raw('POST', '/reactor-formulas/', { key, body: { name: 'f', code: CODE } })).body;
    expect((await create({ name: 'r', formula: { id: formula.id } })).errors).toEqual({ configuration: ['is required (an object of configuration names and values)'] });
    expect((await server.raw('GET', '/reactors/', { key })).body.data).toEqual([]);
    // Without reactor:create: 403.
    const reader = await server.key({ permissions: ['reactor:read'] });
    expect((await problem(server, 403, 'POST', '/reactors', { key: reader, body: { name: 'r', code: CODE } })).detail).toContain('reactor:create');
  });

  it('updating and patching reactors: the wrong attribute for the kind, null, wrong media type, unknown id, missing permission', async () => {
    const server = await startSdkServer(store);
    const key = await server.key({ permissions: PRIVATE });
    const inline = (await server.raw('POST', '/reactors', { key, body: { name: 'inline', code: CODE, configuration: { KEY: 'k' } } })).body;
    const formula = (await server.raw('POST', '/reactor-formulas', { key, body: { name: 'f', code: CODE } })).body;
    const onFormula = (await server.raw('POST', '/reactors', { key, body: { name: 'on formula', formula: { id: formula.id }, configuration: {} } })).body;
    const merge = 'application/merge-patch+json';

    expect((await problem(server, 400, 'PUT', `/reactors/${inline.id}`, { key, body: { name: 'x', configuration: {} } })).errors).toEqual({
      code: ['is required (PUT replaces the reactor; PATCH changes only what it names)'],
    });
    expect((await problem(server, 400, 'PUT', `/reactors/${onFormula.id}`, { key, body: { name: 'x', configuration: {}, code: CODE } })).errors.code[0]).toMatch(
      /^cannot be set on a reactor that runs a formula’s code/,
    );
    expect((await problem(server, 400, 'PUT', `/reactors/${inline.id}`, { key, body: { name: 'x', code: 'module.exports = null' } })).errors.code[0]).toMatch(/\(it is null\)$/);
    expect((await problem(server, 400, 'PATCH', `/reactors/${onFormula.id}`, { key, body: { code: CODE }, contentType: merge })).errors.code[0]).toMatch(
      /^cannot be set on a reactor that runs a formula’s code/,
    );
    expect((await problem(server, 400, 'PATCH', `/reactors/${inline.id}`, { key, body: { name: null }, contentType: merge })).errors).toEqual({
      name: ['cannot be removed (null); give a new value or leave it out'],
    });
    expect((await problem(server, 400, 'PATCH', `/reactors/${inline.id}`, { key, body: { code: null }, contentType: merge })).errors).toHaveProperty(['code']);
    expect((await problem(server, 400, 'PATCH', `/reactors/${inline.id}`, { key, body: { formula: { id: formula.id } }, contentType: merge })).errors).toEqual({
      formula: ['cannot be changed; create a new reactor for another formula'],
    });
    expect((await problem(server, 400, 'PATCH', `/reactors/${inline.id}`, { key, body: { configuration: { KEY: [1] } }, contentType: merge })).errors).toHaveProperty([
      'configuration.KEY',
    ]);
    expect((await problem(server, 400, 'PATCH', `/reactors/${inline.id}`, { key, body: { code: 'module.exports = 1' }, contentType: merge })).errors.code[0]).toMatch(
      /\(it is number\)$/,
    );
    expect((await problem(server, 400, 'PATCH', `/reactors/${inline.id}`, { key, body: { application: { id: 'nope' } }, contentType: merge })).errors).toEqual({
      'application.id': ['does not name an application of this tenant'],
    });
    expect((await problem(server, 400, 'PATCH', `/reactors/${inline.id}`, { key, body: [], contentType: merge })).errors).toEqual({ body: ['must be a JSON object'] });
    expect((await problem(server, 415, 'PATCH', `/reactors/${inline.id}`, { key, body: { name: 'x' } })).detail).toBe(
      'Content-Type must be application/merge-patch+json (RFC 7386)',
    );
    await problem(server, 404, 'PATCH', '/reactors/00000000-0000-4000-8000-000000000000', { key, body: { name: 'x' }, contentType: merge });
    const reader = await server.key({ permissions: ['reactor:read'] });
    expect((await problem(server, 403, 'PATCH', `/reactors/${inline.id}`, { key: reader, body: { name: 'x' }, contentType: merge })).detail).toContain('reactor:update');
    // Nothing changed.
    expect((await server.raw('GET', `/reactors/${inline.id}`, { key })).body).toMatchObject({ name: 'inline', code: CODE, configuration: { KEY: 'k' } });
    expect((await server.raw('GET', `/reactors/${onFormula.id}`, { key })).body).toMatchObject({ name: 'on formula', formula: { id: formula.id } });
  });

  it('formulas: type other than private, code that does not export a function', async () => {
    const server = await startSdkServer(store);
    const key = await server.key({ permissions: PRIVATE });
    expect((await problem(server, 400, 'POST', '/reactor-formulas/', { key, body: { name: 'f', type: 'official', code: CODE } })).errors).toEqual({
      type: ["must be 'private' (official formulas belong to the hosted service; a tenant's formulas are private)"],
    });
    expect((await problem(server, 400, 'POST', '/reactor-formulas/', { key, body: { name: 'f', code: 'module.exports = "x"' } })).errors.code[0]).toMatch(/\(it is string\)$/);
    const formula = (await server.raw('POST', '/reactor-formulas', { key, body: { name: 'f', code: CODE } })).body;
    expect((await problem(server, 400, 'PUT', `/reactor-formulas/${formula.id}`, { key, body: { name: 'f', code: 'throw new TypeError("x")' } })).errors).toEqual({
      code: ['fails when it is loaded: x (line 1)'],
    });
    expect((await server.raw('GET', `/reactor-formulas/${formula.id}`, { key })).body.code).toBe(CODE);
  });

  it('detokenize: unknown token, malformed expression, too many tokens, no token:use, an ungranted container, no body', async () => {
    const server = await startSdkServer(store);
    const key = await server.key({ permissions: PRIVATE, rules: REVEAL_ALL });
    const token = (await server.raw('POST', '/tokens', { key, body: { type: 'token', data: 'secret-value' } })).body;
    const detokenize = (body: unknown, status = 400, k = key) => problem(server, status, 'POST', '/detokenize', { key: k, body });
    expect((await detokenize({ a: { b: ['{{ missing-token }}'] } })).errors).toEqual({ 'body.a.b[0]': ["names the token 'missing-token', which does not exist"] });
    expect((await detokenize({ a: '{{ }}' })).errors['body.a'][0]).toMatch(/without a token id/);
    expect((await detokenize({ a: `{{ ${token.id}` })).errors).toEqual({ 'body.a': ["has a '{{' without its closing '}}'"] });
    const many = Object.fromEntries(Array.from({ length: MAX_DETOKENIZED_TOKENS + 1 }, (_, i) => [`k${i}`, `{{ id-${i} }}`]));
    expect((await detokenize(many)).errors).toEqual({
      body: [`detokenizes ${MAX_DETOKENIZED_TOKENS + 1} distinct tokens; at most ${MAX_DETOKENIZED_TOKENS} are allowed per request`],
    });
    expect((await problem(server, 400, 'POST', '/detokenize', { key, body: '{"a":', contentType: 'application/json' })).errors).toHaveProperty(['body']);
    await problem(server, 415, 'POST', '/detokenize', { key, body: 'a=1', contentType: 'application/x-www-form-urlencoded' });
    const noUse = await server.key({ permissions: ['token:read'], rules: [{ description: 'r', priority: 1, container: '/', transform: 'reveal', permissions: ['token:read'] }] });
    expect((await detokenize({ a: `{{ ${token.id} }}` }, 403, noUse)).detail).toContain('token:use');
    // token:use on /pci/ only and no other grant on the token: answered as a missing id (400).
    const elsewhere = await server.key({
      permissions: ['token:use'],
      rules: [{ description: 'pci only', priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:use'] }],
    });
    const hidden = await detokenize({ a: `{{ ${token.id} }}` }, 400, elsewhere);
    expect(hidden.errors).toEqual({ 'body.a': [`names the token '${token.id}', which does not exist`] });
    // With token:read on it, the caller knows the token exists: 403.
    const readsIt = await server.key({
      permissions: ['token:use', 'token:read'],
      rules: [
        { description: 'pci only', priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:use'] },
        { description: 'read all', priority: 2, container: '/', transform: 'mask', permissions: ['token:read'] },
      ],
    });
    const denied = await detokenize({ a: `{{ ${token.id} }}` }, 403, readsIt);
    expect(JSON.stringify(denied)).not.toContain('secret-value');
    // What a caller may detokenize comes back under its token:use transform.
    expect((await server.raw('POST', '/detokenize', { key, body: JSON.stringify(`x{{ ${token.id} }}x`) })).body).toBe('xsecret-valuex');
  });

  it('permissions: an unknown application_type is a 400 naming the valid ones', async () => {
    const server = await startSdkServer(store);
    const key = await server.key({ permissions: ['token:create'], type: 'public' });
    expect((await problem(server, 400, 'GET', '/permissions/?application_type=admin', { key })).errors).toEqual({
      application_type: ['must be one of public, private, management'],
    });
    await problem(server, 401, 'GET', '/tenants/self', {});
  });
});
