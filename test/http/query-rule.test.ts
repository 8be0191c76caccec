import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { createFetchHandler } from '../../src/http/index.js';
import { describeEachStore, type TestStore } from '../support/stores.js';
import { BASE, PRIVATE_PERMISSIONS, expectProblem, read } from './helpers.js';

/** A handler on a fresh vault of this store, a caller that may do everything, and one token. */
async function setup(store: TestStore) {
  const vault = await store.vault();
  const handler = createFetchHandler(vault);
  const caller = await vault.caller({ permissions: PRIVATE_PERMISSIONS, rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: PRIVATE_PERMISSIONS }] });
  const send = async (method: string, path: string, body?: unknown) =>
    read(
      await handler(
        new Request(BASE + path, {
          method,
          headers: { 'SVC-API-KEY': caller.key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      ),
    );
  const a = (await send('POST', '/tokens', { type: 'token', data: 'a', metadata: { customer: 'c1', plan: 'gold' } })).body;
  const b = (await send('POST', '/tokens', { type: 'token', data: 'b', metadata: { customer: 'c2' } })).body;
  return { vault, caller, send, a, b };
}

const ids = (body: { data: { id: string }[] }) => body.data.map((t) => t.id).sort();

describeEachStore('query parameters and search attributes: one rule', (store) => {
  it('an unknown query parameter is a 400 naming it and the accepted ones; a mistyped filter never lists every token', async () => {
    const { send } = await setup(store);
    const mistyped = expectProblem(await send('GET', '/tokens?metdata.customer=c1'), 400);
    expect(mistyped.errors).toEqual({ 'metdata.customer': ['is not a query parameter of GET /tokens; accepted: id, type, metadata[key], metadata.key, page, size, start'] });
    expect(expectProblem(await send('GET', '/tokens?types=token'), 400).errors).toHaveProperty('types');
    expect(expectProblem(await send('GET', '/reactors?names=r'), 400).errors).toHaveProperty('names');
    expect(expectProblem(await send('GET', '/logs?resource=x'), 400).errors).toHaveProperty('resource');
    const onGet = expectProblem(await send('GET', '/tokens/some-id?fields=data'), 400);
    expect(onGet.errors).toEqual({ fields: ['is not a query parameter of GET /tokens/{id}; accepted: none'] });
    // Also on the routes that need no key.
    expectProblem(await send('GET', '/healthz?verbose=1'), 400);
  });

  it('a parameter name that is not an identifier is reported without being echoed', async () => {
    const { send } = await setup(store);
    const sent = await send('GET', '/tokens?4242424242424242=1');
    expect(expectProblem(sent, 400).errors).toHaveProperty('query');
    expect(sent.text).not.toContain('4242424242424242');
  });

  it('metadata filters in deepObject style (metadata[key]=value) work like metadata.key=value; a repeated key keeps its first value', async () => {
    const { send, a, b } = await setup(store);
    expect(ids((await send('GET', '/tokens?metadata[customer]=c1')).body)).toEqual([a.id]);
    expect(ids((await send('GET', '/tokens?metadata%5Bcustomer%5D=C2')).body)).toEqual([b.id]);
    expect(ids((await send('GET', '/tokens?metadata[customer]=c1&metadata.plan=gold')).body)).toEqual([a.id]);
    expect(ids((await send('GET', '/tokens?metadata.customer=c2&metadata[customer]=c1')).body)).toEqual([b.id]);
    // An empty key is not a metadata filter.
    expect(expectProblem(await send('GET', '/tokens?metadata[]=c1'), 400).errors).toHaveProperty('metadata');
  });

  it('an unknown search attribute is a 400 naming it, over HTTP and in process', async () => {
    const { vault, caller, send } = await setup(store);
    const sent = expectProblem(await send('POST', '/tokens/search', { query: 'type:token', sizes: 1 }), 400);
    expect(sent.errors).toEqual({ sizes: ['is not a recognized attribute; allowed: query, page, size, start'] });
    expect(expectProblem(await send('POST', '/tokens/search', { query: 'type:token', '4242 4242': 1 }), 400).errors).toHaveProperty('body');
    await expect(vault.tokens.search(caller, { query: 'type:token', filter: 'x' } as never)).rejects.toThrow(ValidationError);
    expect((await send('POST', '/tokens/search', { query: 'type:token', size: 1, page: 1 })).status).toBe(200);
  });
});

describe('the rule is in the document', () => {
  it('is stated in the info and the 400 description', async () => {
    const { buildOpenApiDocument } = await import('../../src/http/openapi/document.js');
    const { ROUTES } = await import('../../src/http/routes/index.js');
    const doc = buildOpenApiDocument(ROUTES, { headerPrefix: 'SVC', maxBodyBytes: 1 }) as any;
    expect(doc.info.description).toMatch(/query parameter the operation does not declare.*400/);
    expect(doc.paths['/tokens'].get.responses['400'].description).toMatch(/unknown query parameter/);
  });
});
