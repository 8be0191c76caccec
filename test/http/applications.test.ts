import { beforeEach, describe, expect, it } from 'vitest';
import { type Harness, expectProblem, harness } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('HTTP applications', (store) => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness({}, store);
  });

  const privateApp = { name: 'checkout', type: 'private', permissions: ['token:create', 'token:read'] };

  describe('/applications', () => {
    it('POST: 201 with the key, shown once; the key works', async () => {
      const sent = await h.call('POST', '/applications', { key: h.adminKey, body: privateApp });
      expect(sent.status).toBe(201);
      expect(sent.body).toMatchObject({ name: 'checkout', type: 'private', permissions: ['token:create', 'token:read'], rules: [], tenant_id: h.vault.tenantId });
      expect(typeof sent.body.key).toBe('string');
      expect((await h.call('GET', '/tokens', { key: sent.body.key })).status).toBe(200);
      const got = await h.call('GET', `/applications/${sent.body.id}`, { key: h.adminKey });
      expect(got.status).toBe(200);
      expect(got.body.key).toBeUndefined();
      expect(got.text).not.toContain(sent.body.key);
    });

    it('POST: 400 for a permission the type may not hold', async () => {
      const sent = await h.call('POST', '/applications', { key: h.adminKey, body: { name: 'x', type: 'public', permissions: ['token:read'] } });
      expect(expectProblem(sent, 400).errors['permissions[0]']).toBeDefined();
    });

    it('GET: lists, paged', async () => {
      await h.call('POST', '/applications', { key: h.adminKey, body: privateApp });
      const sent = await h.call('GET', '/applications?size=1&page=2', { key: h.adminKey });
      expect(sent.status).toBe(200);
      expect(sent.body.pagination).toMatchObject({ page_number: 2, page_size: 1 });
      expect(sent.body.data).toHaveLength(1);
      expect(sent.text).not.toContain('"key"');
    });

    it('PUT: 200, replaces name and permissions; 404 for an unknown id', async () => {
      const app = (await h.call('POST', '/applications', { key: h.adminKey, body: privateApp })).body;
      const sent = await h.call('PUT', `/applications/${app.id}`, { key: h.adminKey, body: { name: 'renamed', permissions: ['token:read'] } });
      expect(sent.status).toBe(200);
      expect(sent.body).toMatchObject({ name: 'renamed', permissions: ['token:read'] });
      expectProblem(await h.call('PUT', '/applications/00000000-0000-4000-8000-000000000000', { key: h.adminKey, body: { name: 'x' } }), 404);
      expectProblem(await h.call('PUT', `/applications/${app.id}`, { key: h.adminKey, body: { name: 'x' }, contentType: 'text/plain' }), 415);
    });

    it('POST /applications/{id}/regenerate: 200 with a new key; the old key is then 401', async () => {
      const app = (await h.call('POST', '/applications', { key: h.adminKey, body: privateApp })).body;
      const sent = await h.call('POST', `/applications/${app.id}/regenerate`, { key: h.adminKey });
      expect(sent.status).toBe(200);
      expect(sent.body.key).not.toBe(app.key);
      expectProblem(await h.call('GET', '/tokens', { key: app.key }), 401);
      expect((await h.call('GET', '/tokens', { key: sent.body.key })).status).toBe(200);
    });

    it('DELETE: 204, then 404, and its key stops working', async () => {
      const app = (await h.call('POST', '/applications', { key: h.adminKey, body: privateApp })).body;
      const sent = await h.call('DELETE', `/applications/${app.id}`, { key: h.adminKey });
      expect(sent.status).toBe(204);
      expect(sent.text).toBe('');
      expectProblem(await h.call('GET', `/applications/${app.id}`, { key: h.adminKey }), 404);
      expectProblem(await h.call('GET', '/tokens', { key: app.key }), 401);
    });
  });

  describe('GET /logs', () => {
    it('lists audit entries with filters, never data', async () => {
      const token = (await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'audit-secret' } })).body;
      await h.call('GET', `/tokens/${token.id}`, { key: h.userKey });
      const sent = await h.call('GET', `/logs?resource_id=${token.id}`, { key: h.adminKey });
      expect(sent.status).toBe(200);
      expect(sent.body.data.map((e: { operation: string }) => e.operation)).toEqual(['token:create', 'token:read']);
      expect(sent.body.data[0]).toMatchObject({ tenant_id: h.vault.tenantId, resource_id: token.id, outcome: 'success' });
      const reads = await h.call('GET', '/logs?operation=token:read', { key: h.adminKey });
      expect(reads.body.data).toHaveLength(1);
      expect(sent.text).not.toContain('audit-secret');
      expectProblem(await h.call('GET', '/logs?size=1000', { key: h.adminKey }), 400);
    });
  });
});
