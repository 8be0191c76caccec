import { beforeEach, describe, expect, it } from 'vitest';
import { AuthorizationError, ConflictError, NotFoundError, ValidationError } from '../../src/errors/errors.js';
import { type Fixture, fixture, rejection } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

const CODE = 'module.exports = async function (req) {\n  return { raw: req.args };\n};\n';

describeEachStore('formula service', (store) => {
  let f: Fixture;
  beforeEach(async () => {
    f = await fixture({}, store);
  });

  describe('FormulaService', () => {
    it('creates, gets, lists, updates and deletes a formula', async () => {
      const created = await f.vault.formulas.create(f.admin, {
        name: ' charge ',
        description: 'Charges a card',
        code: CODE,
        configuration: [{ name: 'api_key', description: 'PSP key', type: 'string' }],
        request_parameters: [
          { name: 'card', type: 'object' },
          { name: 'card.number', description: 'PAN', type: 'string' },
          { name: 'amount', type: 'number', optional: true },
        ],
      });
      expect(created).toMatchObject({
        tenant_id: f.vault.tenantId,
        name: 'charge',
        description: 'Charges a card',
        code: CODE,
        configuration: [{ name: 'api_key', description: 'PSP key', type: 'string' }],
        request_parameters: [
          { name: 'card', description: null, type: 'object', optional: false },
          { name: 'card.number', description: 'PAN', type: 'string', optional: false },
          { name: 'amount', description: null, type: 'number', optional: true },
        ],
        created_by: f.admin.applicationId,
        created_at: '2030-01-01T00:00:00.000+00:00',
      });
      expect(created.modified_at).toBeUndefined();
      expect(await f.vault.formulas.get(f.admin, created.id)).toEqual(created);

      const list = await f.vault.formulas.list(f.admin);
      expect(list.data.map((x) => x.id)).toEqual([created.id]);

      f.vault.clock.advance(1000);
      const updated = await f.vault.formulas.update(f.admin, created.id, { name: 'charge v2', code: CODE.replace('args', 'configuration') });
      // PUT: the declarations not given are cleared.
      expect(updated).toMatchObject({
        name: 'charge v2',
        description: null,
        configuration: [],
        request_parameters: [],
        modified_by: f.admin.applicationId,
        modified_at: '2030-01-01T00:00:01.000+00:00',
      });
      expect(await f.vault.formulas.get(f.admin, created.id)).toEqual(updated);

      await f.vault.formulas.delete(f.admin, created.id);
      await expect(f.vault.formulas.get(f.admin, created.id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(f.vault.formulas.delete(f.admin, created.id)).rejects.toBeInstanceOf(NotFoundError);
    });

    it('refuses a syntax error on save, naming the line', async () => {
      const error = await rejection(() => f.vault.formulas.create(f.admin, { name: 'bad', code: 'module.exports = async (req) => {\n  return { raw: ;\n};' }));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as unknown as ValidationError).errors.code?.[0]).toMatch(/SyntaxError.*\(line 2\)/);
      const id = (await f.vault.formulas.create(f.admin, { name: 'ok', code: CODE })).id;
      await expect(f.vault.formulas.update(f.admin, id, { name: 'ok', code: 'module.exports = (' })).rejects.toBeInstanceOf(ValidationError);
      expect((await f.vault.formulas.get(f.admin, id)).code).toBe(CODE);
    });

    it('limits the code to 256 KB', async () => {
      const padding = '/*' + 'x'.repeat(256 * 1024) + '*/';
      const error = await rejection(() => f.vault.formulas.create(f.admin, { name: 'big', code: CODE + padding }));
      expect((error as unknown as ValidationError).errors.code?.[0]).toMatch(/at most 256 KB/);
      const fits = CODE + '/*' + 'x'.repeat(256 * 1024 - CODE.length - 4) + '*/';
      await expect(f.vault.formulas.create(f.admin, { name: 'fits', code: fits })).resolves.toMatchObject({ name: 'fits' });
    });

    it('validates the body and the declarations', async () => {
      const bad = async (body: unknown) => ((await rejection(() => f.vault.formulas.create(f.admin, body as never))) as unknown as ValidationError).errors;
      expect(await bad({ code: CODE })).toHaveProperty(['name']);
      expect(await bad({ name: 'x'.repeat(201), code: CODE })).toHaveProperty(['name']);
      expect(await bad({ name: 'x' })).toHaveProperty(['code']);
      expect(await bad({ name: 'x', code: '   ' })).toHaveProperty(['code']);
      expect(await bad({ name: 'x', code: CODE, extra: 1 })).toHaveProperty(['extra']);
      expect(await bad('not an object')).toHaveProperty(['body']);
      expect(await bad({ name: 'x', code: CODE, configuration: [{ name: 'a', type: 'object' }] })).toHaveProperty(['configuration[0].type']);
      expect(await bad({ name: 'x', code: CODE, configuration: [{ name: '', type: 'string' }] })).toHaveProperty(['configuration[0].name']);
      expect(
        await bad({
          name: 'x',
          code: CODE,
          configuration: [
            { name: 'a', type: 'string' },
            { name: 'a', type: 'number' },
          ],
        }),
      ).toHaveProperty(['configuration[1].name']);
      expect(await bad({ name: 'x', code: CODE, request_parameters: [{ name: 'a..b', type: 'string' }] })).toHaveProperty(['request_parameters[0].name']);
      expect(await bad({ name: 'x', code: CODE, request_parameters: [{ name: 'a', type: 'date' }] })).toHaveProperty(['request_parameters[0].type']);
      expect(await bad({ name: 'x', code: CODE, request_parameters: [{ name: 'a', type: 'string', optional: 'no' }] })).toHaveProperty(['request_parameters[0].optional']);
      expect(
        await bad({
          name: 'x',
          code: CODE,
          request_parameters: [
            { name: 'a', type: 'string' },
            { name: 'a.b', type: 'string' },
          ],
        }),
      ).toHaveProperty(['request_parameters[1].name']);
      expect(await bad({ name: 'x', code: CODE, request_parameters: Array.from({ length: 101 }, (_, i) => ({ name: `p${i}`, type: 'string' })) })).toHaveProperty([
        'request_parameters',
      ]);
    });

    it('requires the reactor permissions', async () => {
      const tokensOnly = await f.vault.caller({ permissions: ['token:create', 'token:use'] });
      await expect(f.vault.formulas.create(tokensOnly, { name: 'x', code: CODE })).rejects.toBeInstanceOf(AuthorizationError);
      const id = (await f.vault.formulas.create(f.admin, { name: 'x', code: CODE })).id;
      await expect(f.vault.formulas.get(tokensOnly, id)).rejects.toBeInstanceOf(AuthorizationError);
      await expect(f.vault.formulas.list(tokensOnly)).rejects.toBeInstanceOf(AuthorizationError);
      await expect(f.vault.formulas.update(tokensOnly, id, { name: 'x', code: CODE })).rejects.toBeInstanceOf(AuthorizationError);
      await expect(f.vault.formulas.delete(tokensOnly, id)).rejects.toBeInstanceOf(AuthorizationError);
      const reader = await f.vault.caller({ permissions: ['reactor:read'] });
      await expect(f.vault.formulas.get(reader, id)).resolves.toMatchObject({ id });
      await expect(f.vault.formulas.delete(reader, id)).rejects.toBeInstanceOf(AuthorizationError);
    });

    it("hides another tenant's formulas", async () => {
      const id = (await f.vault.formulas.create(f.admin, { name: 'x', code: CODE })).id;
      const other = await f.vault.createTenant({ name: 'other' });
      const otherAdmin = await f.vault.authenticate(other.application.key);
      await expect(f.vault.formulas.get(otherAdmin, id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(f.vault.formulas.update(otherAdmin, id, { name: 'x', code: CODE })).rejects.toBeInstanceOf(NotFoundError);
      await expect(f.vault.formulas.delete(otherAdmin, id)).rejects.toBeInstanceOf(NotFoundError);
      expect((await f.vault.formulas.list(otherAdmin)).data).toEqual([]);
    });

    it('refuses to delete a formula a reactor uses (409)', async () => {
      const formula = await f.vault.formulas.create(f.admin, { name: 'x', code: CODE });
      const reactor = await f.vault.reactors.create(f.admin, { name: 'r', formula: { id: formula.id }, configuration: {} });
      await expect(f.vault.formulas.delete(f.admin, formula.id)).rejects.toBeInstanceOf(ConflictError);
      await f.vault.reactors.delete(f.admin, reactor.id);
      await expect(f.vault.formulas.delete(f.admin, formula.id)).resolves.toBeUndefined();
    });

    it('audits writes and failures without data', async () => {
      const formula = await f.vault.formulas.create(f.admin, { name: 'x', code: CODE });
      await rejection(() => f.vault.formulas.create(f.admin, { name: 'x', code: 'syntax error here(' }));
      await f.vault.formulas.delete(f.admin, formula.id);
      const logs = await f.vault.logs.list(f.admin, { size: 100 });
      const entries = logs.data.map((e) => [e.operation, e.outcome, e.resource_id, e.detail]);
      expect(entries).toEqual(
        expect.arrayContaining([
          ['formula:create', 'success', formula.id, null],
          ['formula:create', 'failure', null, 'validation_error'],
          ['formula:delete', 'success', formula.id, null],
        ]),
      );
    });
  });
});
