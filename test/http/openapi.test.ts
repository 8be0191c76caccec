import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../src/http/routes/index.js';
import { PERMISSIONS } from '../../src/permissions/permissions.js';
import { TIMEOUT_MS } from '../../src/reactors/reactor-input.js';
import { SEARCH_KEYS } from '../../src/tokens/search-input.js';
import { CREATE_KEYS, TOKEN_INPUT_LIMITS, UPDATE_KEYS } from '../../src/tokens/token-input-schemas.js';
import { type Harness, VISA, harness } from './helpers.js';
import { checkShape } from './shape.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('HTTP OpenAPI document', (store) => {
  let h: Harness;
  let doc: any;
  beforeAll(async () => {
    h = await harness({}, store);
    doc = (await h.call('GET', '/openapi.json')).body;
  });
  afterAll(async () => {
    await h.vault.close();
  });

  const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
  const operations = () => Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));

  describe('GET /openapi.json', () => {
    it('is an OpenAPI 3.1 document served without a key', () => {
      expect(doc.openapi).toBe('3.1.0');
      expect(doc.info.title).toBe('tokenvault');
    });

    it('documents exactly the routes of the router', () => {
      const routed = ROUTES.map((r) => `${r.method} ${r.path}`).sort();
      // And the proxy's paths, which pass any request through (docs/proxies.md).
      const proxied = ['/proxy', '/proxy/{path}'].flatMap((path) => ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'].map((m) => `${m} ${path}`));
      expect(operations().sort()).toEqual([...routed, ...proxied].sort());
    });

    it('every documented operation is routed by the handler, and no other method is (405)', async () => {
      const paths = doc.paths as Record<string, Record<string, unknown>>;
      const patterns = Object.keys(paths).map((path) => ({ path, regex: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`) }));
      for (const path of Object.keys(paths)) {
        const concrete = path.replace(/\{[^}]+\}/g, 'some-id');
        // /tokens/search is also /tokens/{id} for other methods: the union of every documented match.
        const allowed = new Set(patterns.filter((p) => p.regex.test(concrete)).flatMap((p) => Object.keys(paths[p.path]!).map((m) => m.toUpperCase())));
        for (const method of METHODS) {
          const sent = await h.call(method, concrete, { key: h.userKey });
          const routeProblem = /route-not-found|method-not-allowed/.test(sent.body?.type ?? '');
          if (allowed.has(method)) {
            expect(routeProblem, `${method} ${concrete}`).toBe(false);
          } else {
            expect(sent.status, `${method} ${concrete}`).toBe(405);
            expect(sent.headers.get('allow')).toBe([...allowed].sort().join(', '));
          }
        }
      }
    });

    it('names the API key security scheme after the header prefix; public routes opt out', async () => {
      expect(doc.components.securitySchemes).toEqual({ 'SVC-API-KEY': { type: 'apiKey', in: 'header', name: 'SVC-API-KEY' } });
      expect(doc.security).toEqual([{ 'SVC-API-KEY': [] }]);
      expect(doc.paths['/healthz'].get.security).toEqual([]);
      const params = doc.paths['/tokens'].post.parameters.map((p: { name: string }) => p.name);
      expect(params).toContain('SVC-IDEMPOTENCY-KEY');
      const bt = await harness({ headerPrefix: 'BT' }, store);
      try {
        const btDoc = (await bt.call('GET', '/openapi.json')).body;
        expect(Object.keys(btDoc.components.securitySchemes)).toEqual(['BT-API-KEY']);
        expect(btDoc.paths['/tokens'].post.parameters.map((p: { name: string }) => p.name)).toContain('BT-IDEMPOTENCY-KEY');
      } finally {
        await bt.vault.close();
      }
    });

    it('declares status codes, request bodies and path parameters', () => {
      const patch = doc.paths['/tokens/{id}'].patch;
      expect(Object.keys(patch.requestBody.content)).toEqual(['application/merge-patch+json']);
      expect(Object.keys(patch.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403', '404', '409', '413', '415', '422', '500']));
      expect(patch.parameters[0]).toMatchObject({ name: 'id', in: 'path', required: true });
      expect(doc.paths['/tokens'].post.responses['201'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Token' });
      expect(doc.paths['/tokens/{id}'].delete.responses['204']).toBeDefined();
      expect(doc.paths['/tokenize'].post.responses['201']).toBeDefined();
      expect(doc.paths['/reactors/{id}/react'].post.requestBody.required).toBe(false);
      expect(doc.paths['/reactors/{id}/react'].post['x-permission']).toBe('token:use');
      expect(doc.paths['/tokens'].get.parameters.find((p: { name: string }) => p.name === 'id')).toMatchObject({ schema: { type: 'array' }, explode: true });
      // A generated client sends the declared media type: PATCH declares only merge patch (the proxy forwards any).
      for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
        if (ops.patch && !path.startsWith('/proxy')) expect(Object.keys(ops.patch.requestBody.content), path).toEqual(['application/merge-patch+json']);
      }
    });

    it('request schemas are generated from the valibot schemas the services use', () => {
      const schemas = doc.components.schemas;
      // What valibot says, not a copy: limits, enums, required names, unknown attributes refused.
      expect(schemas.CreateApplicationRequest).toMatchObject({ type: 'object', additionalProperties: false, required: ['name', 'type'] });
      expect(schemas.CreateApplicationRequest.properties.name).toMatchObject({ type: 'string', minLength: 1, maxLength: 200 });
      expect(schemas.CreateApplicationRequest.properties.permissions.items.enum).toEqual([...PERMISSIONS]);
      expect(schemas.CreateApplicationRequest.properties.rules.items).toEqual({ $ref: '#/components/schemas/AccessRule' });
      expect(schemas.AccessRule.properties.priority).toMatchObject({ type: 'integer', minimum: 0 });
      expect(Object.keys(schemas.CreateTokenRequest.properties).sort()).toEqual([...CREATE_KEYS].sort());
      expect(Object.keys(schemas.UpdateTokenRequest.properties).sort()).toEqual([...UPDATE_KEYS].sort());
      expect(schemas.CreateTokenRequest).toMatchObject({ additionalProperties: false, required: ['type', 'data'] });
      expect(schemas.CreateTokenRequest.properties.id.anyOf[0]).toMatchObject({ maxLength: TOKEN_INPUT_LIMITS.idLength });
      expect(Object.keys(schemas.SearchTokensRequest.properties).sort()).toEqual([...SEARCH_KEYS].sort());
      expect(schemas.SearchTokensRequest.additionalProperties).toBe(false);
      expect(schemas.ReactRequest.properties.timeout_ms.anyOf[0]).toMatchObject({ minimum: TIMEOUT_MS.min, maximum: TIMEOUT_MS.max });
      // A default would make a generated client's type require the property: it is described instead.
      expect(JSON.stringify(schemas)).not.toContain('"default"');
      expect(schemas.ReactRequest.required ?? []).not.toContain('timeout_ms');
      expect(schemas.FormulaRequestParameter.required).not.toContain('optional');
      // Free-form objects accept any property in a generated client.
      expect(schemas.ReactRequest.properties.args.anyOf[0].additionalProperties).toBe(true);
      expect(schemas.CreateReactorRequest.properties.configuration.anyOf[0].additionalProperties).toBe(true);
      expect(schemas.ReactorResponse.properties.tokens.additionalProperties).toBe(true);
      expect(schemas.Reactor.properties.configuration.additionalProperties).toBe(true);
    });

    it('required lists hold only what every response carries; servers, license, metadata filter and replay header are documented', async () => {
      // A duplicate the caller may not read is identity only: no containers.
      expect(doc.components.schemas.Token.required).toEqual(['id', 'type', 'tenant_id']);
      expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
      expect(doc.info.license.name).toBe('MIT');
      expect(doc.info.description).toMatch(/404.*405 with an Allow header/);
      const metadata = doc.paths['/tokens'].get.parameters.find((p: { name: string }) => p.name === 'metadata');
      expect(metadata).toMatchObject({ in: 'query', style: 'deepObject', explode: true, schema: { type: 'object', additionalProperties: { type: 'string' } } });
      expect(doc.paths['/tokens'].post.responses['201'].headers['SVC-Idempotent-Replayed']).toBeDefined();
      expect(doc.paths['/tokens/{id}'].get.responses['200'].headers).toBeUndefined();
      const replayed = await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'x' }, headers: { 'SVC-IDEMPOTENCY-KEY': 'k1' } });
      const again = await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'x' }, headers: { 'SVC-IDEMPOTENCY-KEY': 'k1' } });
      expect([replayed.headers.get('SVC-Idempotent-Replayed'), again.headers.get('SVC-Idempotent-Replayed')]).toEqual([null, 'true']);
    });

    it('every $ref resolves', () => {
      const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
      expect(refs.length).toBeGreaterThan(10);
      for (const ref of refs) {
        const name = ref.slice('"$ref":"#/components/schemas/'.length, -1);
        expect(doc.components.schemas[name], ref).toBeDefined();
      }
    });

    it('responses match their declared schemas', async () => {
      const created = await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'card', data: VISA, metadata: { a: 'b' }, expires_at: '2031-01-01T00:00:00Z' } });
      checkShape(doc, 'Token', created.body);
      checkShape(doc, 'Token', (await h.call('GET', `/tokens/${created.body.id}`, { key: h.userKey })).body);
      checkShape(doc, 'TokenList', (await h.call('GET', '/tokens', { key: h.userKey })).body);
      checkShape(doc, 'TokenList', (await h.call('GET', '/tokens?page=1', { key: h.userKey })).body);
      const app = await h.call('POST', '/applications', {
        key: h.adminKey,
        body: { name: 'a', type: 'private', permissions: ['token:read'], rules: [{ priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] }] },
      });
      checkShape(doc, 'Application', app.body);
      checkShape(doc, 'ApplicationList', (await h.call('GET', '/applications', { key: h.adminKey })).body);
      checkShape(doc, 'AuditEntryList', (await h.call('GET', '/logs', { key: h.adminKey })).body);
      checkShape(doc, 'Problem', (await h.call('POST', '/tokens', { key: h.userKey, body: {} })).body);
      checkShape(doc, 'Health', (await h.call('GET', '/healthz')).body);
    });

    it('the shape check rejects an undeclared property and a missing required one', () => {
      expect(() => checkShape(doc, 'Health', { status: 'ok', extra: 1 })).toThrow(/extra/);
      expect(() => checkShape(doc, 'Problem', { type: 'x', title: 't', status: 400 })).toThrow(/detail/);
    });
  });
});
