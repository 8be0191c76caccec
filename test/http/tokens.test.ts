import { beforeEach, describe, expect, it } from 'vitest';
import { type Harness, VISA, expectProblem, harness } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('HTTP tokens', (store) => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness({}, store);
  });

  const card = (extra: Record<string, unknown> = {}) => ({ type: 'card', data: VISA, metadata: { customer: 'ACME' }, ...extra });

  describe('POST /tokens', () => {
    it('creates a token: 201 with the create response fields, data masked for a masking caller', async () => {
      const sent = await h.call('POST', '/tokens', { key: h.userKey, body: card() });
      expect(sent.status).toBe(201);
      expect(sent.headers.get('content-type')).toBe('application/json');
      expect(sent.body).toMatchObject({
        type: 'card',
        tenant_id: h.vault.tenantId,
        containers: ['/pci/high/'],
        metadata: { customer: 'ACME' },
        search_indexes: [],
        fingerprint_expression: '{{ data.number }}',
      });
      expect(sent.body.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(sent.body.data.number).toBe('XXXXXXXXXXXX4242');
      expect(sent.body.mask).toBeDefined();
      expect(typeof sent.body.created_at).toBe('string');
      expect(sent.text).not.toContain(VISA.number);
    });

    it('accepts application/json with a charset and +json media types', async () => {
      const a = await h.call('POST', '/tokens', { key: h.userKey, body: card(), contentType: 'application/json; charset=UTF-8' });
      const b = await h.call('POST', '/tokens', { key: h.userKey, body: card(), contentType: 'application/vnd.tokenvault+json' });
      expect([a.status, b.status]).toEqual([201, 201]);
    });

    it('400 with field errors on a validation failure, never echoing the data', async () => {
      const sent = await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'card', data: { number: '4242424242424241' } } });
      const problem = expectProblem(sent, 400);
      expect(problem.errors).toBeDefined();
      expect(Object.keys(problem.errors).some((field) => field.startsWith('data'))).toBe(true);
      expect(sent.text).not.toContain('4242424242424241');
    });

    it('409 when the id is taken', async () => {
      await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', id: 'customer-1', data: 'x1' } });
      const again = await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', id: 'customer-1', data: 'x2' } });
      expectProblem(again, 409);
    });

    it('400 for malformed JSON, 400 for an empty body', async () => {
      expectProblem(await h.call('POST', '/tokens', { key: h.userKey, body: '{"type": "token", ' }), 400);
      expectProblem(await h.call('POST', '/tokens', { key: h.userKey, body: '' }), 400);
    });

    it('415 without a JSON Content-Type (missing, text/plain, another charset)', async () => {
      expectProblem(await h.call('POST', '/tokens', { key: h.userKey, body: card(), contentType: null }), 415);
      expectProblem(await h.call('POST', '/tokens', { key: h.userKey, body: card(), contentType: 'text/plain' }), 415);
      expectProblem(await h.call('POST', '/tokens', { key: h.userKey, body: card(), contentType: 'application/json; charset=iso-8859-1' }), 415);
    });
  });

  describe('GET /tokens/{id}', () => {
    it('returns the token with the get fields (no echoed mask), data by transform', async () => {
      const created = (await h.call('POST', '/tokens', { key: h.userKey, body: card() })).body;
      const sent = await h.call('GET', `/tokens/${created.id}`, { key: h.userKey });
      expect(sent.status).toBe(200);
      expect(sent.body).toMatchObject({
        id: created.id,
        type: 'card',
        tenant_id: h.vault.tenantId,
        containers: ['/pci/high/'],
        metadata: { customer: 'ACME' },
        created_by: expect.any(String),
        created_at: expect.any(String),
      });
      expect(sent.body.mask).toBeUndefined();
      expect(sent.body.search_indexes).toBeUndefined();
      expect(sent.body.data.number).toBe('XXXXXXXXXXXX4242');
    });

    it('URL-decodes the path id', async () => {
      await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', id: 'a:b@c', data: 'x1' } });
      const sent = await h.call('GET', `/tokens/${encodeURIComponent('a:b@c')}`, { key: h.userKey });
      expect(sent.status).toBe(200);
      expect(sent.body.id).toBe('a:b@c');
    });

    it('404 for an unknown id, and for another tenant’s token', async () => {
      expectProblem(await h.call('GET', '/tokens/nope', { key: h.userKey }), 404);
      const other = await h.vault.createTenant({ name: 'other' });
      const created = (await h.call('POST', '/tokens', { key: h.userKey, body: card() })).body;
      const otherAdmin = await h.vault.authenticate(other.application.key);
      const otherUser = await h.vault.applications.create(otherAdmin, { name: 'u', type: 'private', permissions: ['token:read'] });
      expectProblem(await h.call('GET', `/tokens/${created.id}`, { key: otherUser.key! }), 404);
    });

    it('400 for malformed percent-encoding in the id', async () => {
      expectProblem(await h.call('GET', '/tokens/%E0%A4%A', { key: h.userKey }), 400);
    });
  });

  describe('GET /tokens', () => {
    it('lists with repeatable id and type filters and metadata.<key> (first value of a repeated key)', async () => {
      const a = (await h.call('POST', '/tokens', { key: h.userKey, body: card() })).body;
      const b = (await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'x1', metadata: { customer: 'Other' } } })).body;
      const c = (await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'x2' } })).body;

      const all = await h.call('GET', '/tokens', { key: h.userKey });
      expect(all.status).toBe(200);
      expect(all.body.pagination).toEqual({ page_size: 20, next: null });
      expect(all.body.data.map((t: { id: string }) => t.id)).toEqual([a.id, b.id, c.id]);

      const byId = await h.call('GET', `/tokens?id=${a.id}&id=${c.id}`, { key: h.userKey });
      expect(byId.body.data.map((t: { id: string }) => t.id)).toEqual([a.id, c.id]);
      const byType = await h.call('GET', '/tokens?type=card&type=bank', { key: h.userKey });
      expect(byType.body.data.map((t: { id: string }) => t.id)).toEqual([a.id]);
      const byMeta = await h.call('GET', '/tokens?metadata.customer=acme', { key: h.userKey });
      expect(byMeta.body.data.map((t: { id: string }) => t.id)).toEqual([a.id]);
      const repeated = await h.call('GET', '/tokens?metadata.customer=other&metadata.customer=acme', { key: h.userKey });
      expect(repeated.body.data.map((t: { id: string }) => t.id)).toEqual([b.id]);
      // An unknown parameter is refused by name, not ignored (query-rule.test.ts has the rest).
      const unknown = await h.call('GET', '/tokens?colour=blue&type=token', { key: h.userKey });
      expect(expectProblem(unknown, 400).errors).toHaveProperty('colour');
    });

    it('pages by cursor (size, start) and by offset (page)', async () => {
      for (let i = 0; i < 3; i++) await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: `v${i}xx` } });
      const first = await h.call('GET', '/tokens?size=2', { key: h.userKey });
      expect(first.body.data).toHaveLength(2);
      expect(typeof first.body.pagination.next).toBe('string');
      const second = await h.call('GET', `/tokens?size=2&start=${encodeURIComponent(first.body.pagination.next)}`, { key: h.userKey });
      expect(second.body.data).toHaveLength(1);
      const offset = await h.call('GET', '/tokens?page=2&size=2', { key: h.userKey });
      expect(offset.body.pagination).toEqual({ total_items: 3, page_number: 2, page_size: 2, total_pages: 2 });
      expect(offset.body.data).toHaveLength(1);
    });

    it('400 for bad paging values', async () => {
      expectProblem(await h.call('GET', '/tokens?size=0', { key: h.userKey }), 400);
      expectProblem(await h.call('GET', '/tokens?size=abc', { key: h.userKey }), 400);
      expectProblem(await h.call('GET', '/tokens?page=1&start=x', { key: h.userKey }), 400);
    });
  });

  describe('PATCH /tokens/{id}', () => {
    it('applies a merge patch: 200 with the update response', async () => {
      const created = (await h.call('POST', '/tokens', { key: h.userKey, body: card() })).body;
      const sent = await h.call('PATCH', `/tokens/${created.id}`, { key: h.userKey, body: { metadata: { customer: null, plan: 'gold' } } });
      expect(sent.status).toBe(200);
      expect(sent.body.metadata).toEqual({ plan: 'gold' });
      expect(sent.body.modified_by).toBeDefined();
      expect(sent.body.search_indexes).toEqual([]);
    });

    it('415 unless the Content-Type is application/merge-patch+json (docs/http-api.md)', async () => {
      const created = (await h.call('POST', '/tokens', { key: h.userKey, body: card() })).body;
      const json = await h.call('PATCH', `/tokens/${created.id}`, { key: h.userKey, body: { metadata: {} }, contentType: 'application/json' });
      expect(expectProblem(json, 415).detail).toContain('merge-patch');
      expectProblem(await h.call('PATCH', `/tokens/${created.id}`, { key: h.userKey, body: { metadata: {} }, contentType: null }), 415);
      const ok = await h.call('PATCH', `/tokens/${created.id}`, { key: h.userKey, body: { metadata: {} }, contentType: 'application/merge-patch+json; charset=utf-8' });
      expect(ok.status).toBe(200);
    });

    it('404 for an unknown token, 400 for a bad patch', async () => {
      expectProblem(await h.call('PATCH', '/tokens/nope', { key: h.userKey, body: { metadata: {} } }), 404);
      const created = (await h.call('POST', '/tokens', { key: h.userKey, body: card() })).body;
      expectProblem(await h.call('PATCH', `/tokens/${created.id}`, { key: h.userKey, body: { type: 'bank' } }), 400);
    });
  });

  describe('DELETE /tokens/{id}', () => {
    it('204 with no body, then 404', async () => {
      const created = (await h.call('POST', '/tokens', { key: h.userKey, body: card() })).body;
      const sent = await h.call('DELETE', `/tokens/${created.id}`, { key: h.userKey });
      expect(sent.status).toBe(204);
      expect(sent.text).toBe('');
      expectProblem(await h.call('GET', `/tokens/${created.id}`, { key: h.userKey }), 404);
      expectProblem(await h.call('DELETE', `/tokens/${created.id}`, { key: h.userKey }), 404);
    });
  });

  describe('POST /tokens/search', () => {
    it('searches with a query and paging in the body', async () => {
      const a = (await h.call('POST', '/tokens', { key: h.userKey, body: card() })).body;
      await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'x1' } });
      const sent = await h.call('POST', '/tokens/search', { key: h.userKey, body: { query: 'type:card AND metadata.customer:acme', size: 5 } });
      expect(sent.status).toBe(200);
      expect(sent.body.pagination.page_size).toBe(5);
      expect(sent.body.data.map((t: { id: string }) => t.id)).toEqual([a.id]);
    });

    it('400 for a bad query or a body that is not an object with a query', async () => {
      expectProblem(await h.call('POST', '/tokens/search', { key: h.userKey, body: { query: 'colour:blue' } }), 400);
      expectProblem(await h.call('POST', '/tokens/search', { key: h.userKey, body: [1, 2] }), 400);
      expectProblem(await h.call('POST', '/tokens/search', { key: h.userKey, body: {} }), 400);
    });
  });

  describe('POST /tokenize', () => {
    it('201: the body’s shape with each {type, data} replaced by its token', async () => {
      const sent = await h.call('POST', '/tokenize', {
        key: h.userKey,
        body: { customer: { card: { type: 'card', data: VISA }, note: 'kept' }, list: [{ type: 'token', data: 'x1' }, 7] },
      });
      expect(sent.status).toBe(201);
      expect(sent.body.customer.note).toBe('kept');
      expect(sent.body.customer.card).toMatchObject({ type: 'card', id: expect.any(String) });
      expect(sent.body.list[0]).toMatchObject({ type: 'token', id: expect.any(String) });
      expect(sent.body.list[1]).toBe(7);
      expect(sent.text).not.toContain(VISA.number);
      const listed = await h.call('GET', '/tokens', { key: h.userKey });
      expect(listed.body.data).toHaveLength(2);
    });

    it('400 and nothing stored when one item is invalid', async () => {
      const sent = await h.call('POST', '/tokenize', {
        key: h.userKey,
        body: [
          { type: 'token', data: 'x1' },
          { type: 'card', data: { number: '1' } },
        ],
      });
      expectProblem(sent, 400);
      expect((await h.call('GET', '/tokens', { key: h.userKey })).body.data).toHaveLength(0);
    });
  });
});
