/**
 * A client scenario written as a user of a generated client would: types from openapi-typescript
 * (api.d.ts, generated from the served document by the test, not committed) and openapi-fetch.
 * No casts: if the document is wrong, this file stops type-checking. The test type-checks it with
 * its own tsconfig.json and then runs it against the real server.
 */
import createClient from 'openapi-fetch';
import type { paths } from './api.js';

/** What the scenario saw, for the test to assert on. */
export interface ScenarioResult {
  tokenId: string;
  readBack: unknown;
  listedIds: string[];
  patchedMetadata: Record<string, string> | undefined;
  searchedIds: string[];
  reactorRaw: unknown;
  deletedStatus: number;
  afterDeleteStatus: number;
  mistypedFilterStatus: number;
}

function fail(step: string, error: unknown): never {
  throw new Error(`${step} failed: ${JSON.stringify(error)}`);
}

/** Runs the scenario against `baseUrl` with a management key (header `<prefix>-API-KEY`). */
export async function runScenario(baseUrl: string, adminKey: string, prefix: string): Promise<ScenarioResult> {
  const admin = createClient<paths>({ baseUrl, headers: { [`${prefix}-API-KEY`]: adminKey } });

  const app = await admin.POST('/applications', {
    body: {
      name: 'generated client',
      type: 'private',
      permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use', 'reactor:create', 'reactor:read'],
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'] }],
    },
  });
  if (!app.data?.key) fail('create application', app.error);
  const client = createClient<paths>({ baseUrl, headers: { [`${prefix}-API-KEY`]: app.data.key } });

  const created = await client.POST('/tokens', {
    body: { type: 'token', data: { email: 'ada@example.com' }, metadata: { customer: 'c-1' } },
    params: { header: { [`${prefix}-IDEMPOTENCY-KEY`]: 'scenario-create' } },
  });
  if (!created.data) fail('create token', created.error);
  const tokenId = created.data.id;

  const read = await client.GET('/tokens/{id}', { params: { path: { id: tokenId } } });
  if (!read.data) fail('get token', read.error);

  const listed = await client.GET('/tokens', { params: { query: { metadata: { customer: 'c-1' }, size: 10 } } });
  if (!listed.data) fail('list tokens', listed.error);

  const patched = await client.PATCH('/tokens/{id}', {
    params: { path: { id: tokenId } },
    headers: { 'Content-Type': 'application/merge-patch+json' },
    body: { metadata: { customer: 'c-2' }, expires_at: null },
  });
  if (!patched.data) fail('update token', patched.error);

  const searched = await client.POST('/tokens/search', { body: { query: 'metadata.customer:c-2', size: 5 } });
  if (!searched.data) fail('search tokens', searched.error);

  const formula = await admin.POST('/reactor-formulas', {
    body: {
      name: 'echo',
      code: 'module.exports = async (req) => ({ raw: { email: req.args.email, greeting: req.configuration.greeting } })',
      configuration: [{ name: 'greeting', type: 'string' }],
      request_parameters: [{ name: 'email', type: 'string' }],
    },
  });
  if (!formula.data) fail('create formula', formula.error);
  const reactor = await client.POST('/reactors', { body: { name: 'echo', formula: { id: formula.data.id }, configuration: { greeting: 'hello' } } });
  if (!reactor.data) fail('create reactor', reactor.error);
  const reacted = await client.POST('/reactors/{id}/react', {
    params: { path: { id: reactor.data.id } },
    body: { args: { email: `{{ ${tokenId} | json: '$.email' }}` } },
  });
  if (!reacted.data) fail('invoke reactor', reacted.error);

  // A mistyped filter is refused, not answered with every token.
  const mistyped = await fetch(`${baseUrl}/tokens?metdata.customer=c-2`, { headers: { [`${prefix}-API-KEY`]: app.data.key } });

  const deleted = await client.DELETE('/tokens/{id}', { params: { path: { id: tokenId } } });
  const gone = await client.GET('/tokens/{id}', { params: { path: { id: tokenId } } });

  return {
    tokenId,
    readBack: read.data.data,
    listedIds: listed.data.data.map((t) => t.id),
    patchedMetadata: patched.data.metadata,
    searchedIds: searched.data.data.map((t) => t.id),
    // react answers 200 with the result, or 202 when a callback_url asked for an asynchronous run.
    reactorRaw: 'raw' in reacted.data ? reacted.data.raw : undefined,
    deletedStatus: deleted.response.status,
    afterDeleteStatus: gone.response.status,
    mistypedFilterStatus: mistyped.status,
  };
}
