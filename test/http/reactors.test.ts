import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, VISA, expectProblem, harness } from './helpers.js';
import { checkShape } from './shape.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('HTTP reactors', (store) => {
  let h: Harness;
  let doc: any;
  beforeAll(async () => {
    h = await harness({}, store);
    doc = (await h.call('GET', '/openapi.json')).body;
  });
  afterAll(async () => {
    await h.vault.close();
  });

  const ECHO = 'module.exports = async (req) => ({ raw: { args: req.args, configuration: req.configuration } })';
  const formulaBody = (code = ECHO) => ({
    name: 'echo',
    description: 'returns its input',
    code,
    configuration: [{ name: 'greeting', type: 'string' }],
    request_parameters: [{ name: 'card.number', type: 'string' }],
  });

  async function formula(code?: string): Promise<any> {
    const sent = await h.call('POST', '/reactor-formulas', { key: h.adminKey, body: formulaBody(code) });
    expect(sent.status).toBe(201);
    return sent.body;
  }

  async function reactor(formulaId: string, name = 'echo reactor'): Promise<any> {
    const sent = await h.call('POST', '/reactors', { key: h.adminKey, body: { name, formula: { id: formulaId }, configuration: { greeting: 'hi' } } });
    expect(sent.status).toBe(201);
    return sent.body;
  }

  describe('/reactor-formulas', () => {
    it('POST 201, GET, list, PUT 200, DELETE 204 then 404', async () => {
      const created = await formula();
      expect(created).toMatchObject({ name: 'echo', description: 'returns its input', code: ECHO, request_parameters: [{ name: 'card.number', type: 'string', optional: false }] });
      checkShape(doc, 'Formula', created);
      const got = await h.call('GET', `/reactor-formulas/${created.id}`, { key: h.adminKey });
      expect(got.status).toBe(200);
      expect(got.body).toEqual(created);
      const listed = await h.call('GET', '/reactor-formulas', { key: h.adminKey });
      expect(listed.status).toBe(200);
      checkShape(doc, 'FormulaList', listed.body);
      const updated = await h.call('PUT', `/reactor-formulas/${created.id}`, { key: h.adminKey, body: { ...formulaBody(), name: 'renamed' } });
      expect(updated.status).toBe(200);
      expect(updated.body.name).toBe('renamed');
      expect((await h.call('DELETE', `/reactor-formulas/${created.id}`, { key: h.adminKey })).status).toBe(204);
      expectProblem(await h.call('GET', `/reactor-formulas/${created.id}`, { key: h.adminKey }), 404);
    });

    it('400 for an invalid formula; 409 when deleting a formula in use', async () => {
      const bad = await h.call('POST', '/reactor-formulas', { key: h.adminKey, body: { name: 'x', code: '' } });
      expect(expectProblem(bad, 400).errors.code).toBeDefined();
      const used = await formula();
      await reactor(used.id);
      expectProblem(await h.call('DELETE', `/reactor-formulas/${used.id}`, { key: h.adminKey }), 409);
    });
  });

  describe('/reactors', () => {
    it('POST 201, GET, list with id and name filters, PUT 200, DELETE 204', async () => {
      const f = await formula();
      const a = await reactor(f.id, 'Charge card');
      const b = await reactor(f.id, 'Refund');
      checkShape(doc, 'Reactor', a);
      expect(a).toMatchObject({ name: 'Charge card', configuration: { greeting: 'hi' }, formula: { id: f.id } });
      expect((await h.call('GET', `/reactors/${a.id}`, { key: h.adminKey })).body).toEqual(a);
      const byName = await h.call('GET', '/reactors?name=charge', { key: h.adminKey });
      expect(byName.body.data.map((r: { id: string }) => r.id)).toEqual([a.id]);
      const byIds = await h.call('GET', `/reactors?id=${a.id}&id=${b.id}&size=10`, { key: h.adminKey });
      expect(byIds.body.data.map((r: { id: string }) => r.id).sort()).toEqual([a.id, b.id].sort());
      checkShape(doc, 'ReactorList', byIds.body);
      const put = await h.call('PUT', `/reactors/${b.id}`, { key: h.adminKey, body: { name: 'Refund v2', configuration: { greeting: 'hello' } } });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ name: 'Refund v2', configuration: { greeting: 'hello' } });
      expect((await h.call('DELETE', `/reactors/${b.id}`, { key: h.adminKey })).status).toBe(204);
      expectProblem(await h.call('GET', `/reactors/${b.id}`, { key: h.adminKey }), 404);
    });

    it('400 for a bad reactor body (name over 200, unknown formula)', async () => {
      const f = await formula();
      const long = await h.call('POST', '/reactors', { key: h.adminKey, body: { name: 'x'.repeat(201), formula: { id: f.id }, configuration: { greeting: 'hi' } } });
      expectProblem(long, 400);
      const missing = await h.call('POST', '/reactors', { key: h.adminKey, body: { name: 'x', formula: { id: '00000000-0000-4000-8000-000000000000' }, configuration: {} } });
      expect([400, 404]).toContain(missing.status);
    });
  });

  describe('POST /reactors/{id}/react', () => {
    it('200 with the Reactor Response; args detokenized for the invoking application', async () => {
      const f = await formula();
      const r = await reactor(f.id);
      const token = (await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'card', data: VISA } })).body;
      const sent = await h.call('POST', `/reactors/${r.id}/react`, { key: h.userKey, body: { args: { card: `{{ ${token.id} }}`, note: 'plain' } } });
      expect(sent.status).toBe(200);
      checkShape(doc, 'ReactorResponse', sent.body);
      expect(sent.body.raw.args.card.number).toBe(VISA.number);
      expect(sent.body.raw.args.note).toBe('plain');
      expect(sent.body.raw.configuration).toEqual({ greeting: 'hi' });
    });

    it('400 when a required request parameter is missing; a body is optional otherwise', async () => {
      const f = await formula();
      const r = await reactor(f.id);
      expectProblem(await h.call('POST', `/reactors/${r.id}/react`, { key: h.userKey, body: { args: {} } }), 400);
      expectProblem(await h.call('POST', `/reactors/${r.id}/react`, { key: h.userKey }), 400);
      const o = await h.call('POST', '/reactor-formulas', { key: h.adminKey, body: { name: 'open', code: 'module.exports = async () => ({ raw: { ok: true } })' } });
      const openReactor = await h.call('POST', '/reactors', { key: h.adminKey, body: { name: 'open', formula: { id: o.body.id }, configuration: {} } });
      const noBody = await h.call('POST', `/reactors/${openReactor.body.id}/react`, { key: h.userKey });
      expect(noBody.status).toBe(200);
      expect(noBody.body).toEqual({ raw: { ok: true } });
    });

    it('a reactor error becomes a problem with its status; CustomHttpResponseError is passed through', async () => {
      const declined = await h.call('POST', '/reactor-formulas', {
        key: h.adminKey,
        body: { name: 'd', code: "module.exports = async () => { throw new InvalidPaymentMethodError('declined'); }" },
      });
      const dr = await h.call('POST', '/reactors', { key: h.adminKey, body: { name: 'd', formula: { id: declined.body.id }, configuration: {} } });
      const problem = expectProblem(await h.call('POST', `/reactors/${dr.body.id}/react`, { key: h.userKey }), 402);
      expect(problem.title).toBe('InvalidPaymentMethodError');

      const custom = await h.call('POST', '/reactor-formulas', {
        key: h.adminKey,
        body: { name: 'c', code: "module.exports = () => { throw new CustomHttpResponseError({ status: 418, headers: { 'X-Teapot': 'yes' }, body: { brewed: false } }); }" },
      });
      const cr = await h.call('POST', '/reactors', { key: h.adminKey, body: { name: 'c', formula: { id: custom.body.id }, configuration: {} } });
      const sent = await h.call('POST', `/reactors/${cr.body.id}/react`, { key: h.userKey });
      expect(sent.status).toBe(418);
      expect(sent.headers.get('x-teapot')).toBe('yes');
      expect(sent.headers.get('content-type')).toBe('application/json');
      expect(sent.body).toEqual({ brewed: false });
    });

    it('a reactor runtime error is a 500 problem without a stack trace', async () => {
      const boom = await h.call('POST', '/reactor-formulas', { key: h.adminKey, body: { name: 'b', code: 'module.exports = () => { null.x; }' } });
      const br = await h.call('POST', '/reactors', { key: h.adminKey, body: { name: 'b', formula: { id: boom.body.id }, configuration: {} } });
      const sent = await h.call('POST', `/reactors/${br.body.id}/react`, { key: h.userKey });
      expectProblem(sent, 500);
      expect(sent.text).not.toMatch(/\bat .*:\d+/);
    });
  });
});
