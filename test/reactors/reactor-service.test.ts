import { beforeEach, describe, expect, it } from 'vitest';
import { AuthorizationError, NotFoundError, ValidationError } from '../../src/errors/errors.js';
import type { FormulaView } from '../../src/reactors/reactor-views.js';
import { type Fixture, fixture, rejection } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

const CODE = 'module.exports = async (req) => ({ raw: req.configuration })';

describeEachStore('reactor service', (store) => {
  let f: Fixture;
  let formula: FormulaView;
  beforeEach(async () => {
    f = await fixture({}, store);
    formula = await f.vault.formulas.create(f.admin, {
      name: 'configured',
      code: CODE,
      configuration: [
        { name: 'api_key', type: 'string' },
        { name: 'retries', type: 'number' },
        { name: 'live', type: 'boolean' },
      ],
    });
  });

  const CONFIG = { api_key: 'sk_test', retries: 3, live: false };

  async function errorsOf(promise: () => Promise<unknown>): Promise<Record<string, string[]>> {
    const error = await rejection(promise);
    expect(error).toBeInstanceOf(ValidationError);
    return (error as unknown as ValidationError).errors;
  }

  describe('ReactorService CRUD', () => {
    it('creates, gets, updates and deletes a reactor', async () => {
      const app = await f.vault.caller({ name: 'psp app', permissions: ['token:create', 'token:read'] });
      const created = await f.vault.reactors.create(f.admin, { name: 'Charge', formula: { id: formula.id }, configuration: CONFIG, application: { id: app.applicationId } });
      expect(created).toMatchObject({
        tenant_id: f.vault.tenantId,
        name: 'Charge',
        formula,
        configuration: CONFIG,
        application: { id: app.applicationId, name: 'psp app', type: 'private' },
        created_by: f.admin.applicationId,
        created_at: '2030-01-01T00:00:00.000+00:00',
      });
      expect(await f.vault.reactors.get(f.admin, created.id)).toEqual(created);

      f.vault.clock.advance(5000);
      const updated = await f.vault.reactors.update(f.admin, created.id, { name: 'Charge v2', configuration: { ...CONFIG, live: true } });
      // PUT: no application given → the reactor has none.
      expect(updated.application).toBeUndefined();
      expect(updated).toMatchObject({ name: 'Charge v2', configuration: { live: true }, modified_by: f.admin.applicationId, modified_at: '2030-01-01T00:00:05.000+00:00' });
      expect(await f.vault.reactors.get(f.admin, created.id)).toEqual(updated);

      await f.vault.reactors.delete(f.admin, created.id);
      await expect(f.vault.reactors.get(f.admin, created.id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(f.vault.reactors.delete(f.admin, created.id)).rejects.toBeInstanceOf(NotFoundError);
    });

    it('checks the name: required, at most 200 characters', async () => {
      const body = (name: unknown) => ({ name, formula: { id: formula.id }, configuration: CONFIG }) as never;
      expect(await errorsOf(() => f.vault.reactors.create(f.admin, body('')))).toHaveProperty(['name']);
      expect(await errorsOf(() => f.vault.reactors.create(f.admin, body('x'.repeat(201))))).toHaveProperty(['name']);
      expect(await errorsOf(() => f.vault.reactors.create(f.admin, body(5)))).toHaveProperty(['name']);
      await expect(f.vault.reactors.create(f.admin, body('x'.repeat(200)))).resolves.toMatchObject({ name: 'x'.repeat(200) });
    });

    it('requires the configuration to give exactly the declared names with their types', async () => {
      const create = (configuration: unknown) => f.vault.reactors.create(f.admin, { name: 'r', formula: { id: formula.id }, configuration } as never);
      expect(await errorsOf(() => create({ api_key: 'k', retries: 3 }))).toEqual({ 'configuration.live': ['is required (a boolean)'] });
      expect(await errorsOf(() => create({ ...CONFIG, retries: '3' }))).toEqual({ 'configuration.retries': ['must be a number'] });
      expect(await errorsOf(() => create({ ...CONFIG, live: 'false' }))).toEqual({ 'configuration.live': ['must be a boolean'] });
      expect(await errorsOf(() => create({ ...CONFIG, api_key: 1 }))).toEqual({ 'configuration.api_key': ['must be a string'] });
      expect(await errorsOf(() => create({ ...CONFIG, extra: 1 }))).toEqual({ 'configuration.extra': ['is not declared by the formula (declared: api_key, retries, live)'] });
      expect(await errorsOf(() => create([1]))).toHaveProperty(['configuration']);
      expect(await errorsOf(() => f.vault.reactors.create(f.admin, { name: 'r', formula: { id: formula.id } }))).toHaveProperty(['configuration']);
      const id = (await create(CONFIG)).id;
      expect(await errorsOf(() => f.vault.reactors.update(f.admin, id, { name: 'r', configuration: {} }))).toHaveProperty(['configuration.api_key']);
    });

    it('requires a formula of this tenant (or inline code) and refuses to change it on update', async () => {
      expect(await errorsOf(() => f.vault.reactors.create(f.admin, { name: 'r', configuration: {} }))).toEqual({
        code: ['is required (the reactor’s JavaScript), unless formula.id names a formula to run'],
      });
      expect(await errorsOf(() => f.vault.reactors.create(f.admin, { name: 'r', formula: { id: 'nope' }, configuration: {} }))).toEqual({
        'formula.id': ['does not name a formula of this tenant'],
      });
      const id = (await f.vault.reactors.create(f.admin, { name: 'r', formula: { id: formula.id }, configuration: CONFIG })).id;
      expect(await errorsOf(() => f.vault.reactors.update(f.admin, id, { name: 'r', configuration: CONFIG, formula: { id: formula.id } } as never))).toHaveProperty(['formula']);
    });

    it('accepts only public or private applications of this tenant (400 otherwise)', async () => {
      const create = (application: unknown) => f.vault.reactors.create(f.admin, { name: 'r', formula: { id: formula.id }, configuration: CONFIG, application } as never);
      const pub = await f.vault.caller({ permissions: ['token:create'], type: 'public' });
      const management = await f.vault.caller({ permissions: ['application:read'], type: 'management' });
      await expect(create({ id: pub.applicationId })).resolves.toMatchObject({ application: { type: 'public' } });
      expect(await errorsOf(() => create({ id: management.applicationId }))).toEqual({ 'application.id': ['must be an application of type public or private, not management'] });
      expect(await errorsOf(() => create({ id: 'missing' }))).toEqual({ 'application.id': ['does not name an application of this tenant'] });
      const other = await f.vault.createTenant({ name: 'other' });
      expect(await errorsOf(() => create({ id: other.application.id }))).toHaveProperty(['application.id']);
      const id = (await create(null)).id;
      expect(await errorsOf(() => f.vault.reactors.update(f.admin, id, { name: 'r', configuration: CONFIG, application: { id: management.applicationId } }))).toHaveProperty([
        'application.id',
      ]);
    });

    it('lists with filters: id (repeatable) and name (case-insensitive substring, * wildcard)', async () => {
      const make = async (name: string) => (await f.vault.reactors.create(f.admin, { name, formula: { id: formula.id }, configuration: CONFIG })).id;
      const stripe = await make('Stripe Charge');
      const adyen = await make('Adyen Charge');
      const refund = await make('Stripe Refund');
      const names = async (query: Record<string, unknown>) => (await f.vault.reactors.list(f.admin, query)).data.map((r) => r.name).sort();
      expect(await names({})).toEqual(['Adyen Charge', 'Stripe Charge', 'Stripe Refund']);
      expect(await names({ id: stripe })).toEqual(['Stripe Charge']);
      expect(await names({ id: [stripe, adyen] })).toEqual(['Adyen Charge', 'Stripe Charge']);
      expect(await names({ name: 'charge' })).toEqual(['Adyen Charge', 'Stripe Charge']);
      expect(await names({ name: 'STRIPE' })).toEqual(['Stripe Charge', 'Stripe Refund']);
      expect(await names({ name: 's*refund' })).toEqual(['Stripe Refund']);
      expect(await names({ name: 'adyen*refund' })).toEqual([]);
      expect(await names({ id: [refund], name: 'charge' })).toEqual([]);
      const page = await f.vault.reactors.list(f.admin, { size: 2, page: 1 });
      expect(page.pagination).toEqual({ total_items: 3, page_number: 1, page_size: 2, total_pages: 2 });
      expect(page.data[0]?.formula?.id).toBe(formula.id);
      await expect(f.vault.reactors.list(f.admin, { id: [''] })).rejects.toBeInstanceOf(ValidationError);
    });

    it("treats another tenant's reactor as not found (404)", async () => {
      const id = (await f.vault.reactors.create(f.admin, { name: 'r', formula: { id: formula.id }, configuration: CONFIG })).id;
      const other = await f.vault.createTenant({ name: 'other' });
      const otherAdmin = await f.vault.authenticate(other.application.key);
      await expect(f.vault.reactors.get(otherAdmin, id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(f.vault.reactors.update(otherAdmin, id, { name: 'r', configuration: CONFIG })).rejects.toBeInstanceOf(NotFoundError);
      await expect(f.vault.reactors.delete(otherAdmin, id)).rejects.toBeInstanceOf(NotFoundError);
      expect((await f.vault.reactors.list(otherAdmin, { id })).data).toEqual([]);
      // Nor can a reactor be built on another tenant's formula.
      expect(await errorsOf(() => f.vault.reactors.create(otherAdmin, { name: 'r', formula: { id: formula.id }, configuration: CONFIG }))).toHaveProperty(['formula.id']);
    });

    it('requires the reactor permissions', async () => {
      const id = (await f.vault.reactors.create(f.admin, { name: 'r', formula: { id: formula.id }, configuration: CONFIG })).id;
      const none = await f.vault.caller({ permissions: ['token:use'] });
      await expect(f.vault.reactors.create(none, { name: 'r', formula: { id: formula.id }, configuration: CONFIG })).rejects.toBeInstanceOf(AuthorizationError);
      await expect(f.vault.reactors.get(none, id)).rejects.toBeInstanceOf(AuthorizationError);
      await expect(f.vault.reactors.list(none)).rejects.toBeInstanceOf(AuthorizationError);
      await expect(f.vault.reactors.update(none, id, { name: 'r', configuration: CONFIG })).rejects.toBeInstanceOf(AuthorizationError);
      await expect(f.vault.reactors.delete(none, id)).rejects.toBeInstanceOf(AuthorizationError);
    });

    it('audits every operation', async () => {
      const id = (await f.vault.reactors.create(f.admin, { name: 'r', formula: { id: formula.id }, configuration: CONFIG })).id;
      await f.vault.reactors.get(f.admin, id);
      await f.vault.reactors.update(f.admin, id, { name: 'r2', configuration: CONFIG });
      await rejection(() => f.vault.reactors.update(f.admin, id, { name: '', configuration: CONFIG }));
      await f.vault.reactors.delete(f.admin, id);
      const entries = (await f.vault.logs.list(f.admin, { resource_id: id, size: 100 })).data.map((e) => [e.operation, e.outcome, e.detail]);
      expect(entries).toEqual([
        ['reactor:create', 'success', null],
        ['reactor:read', 'success', null],
        ['reactor:update', 'success', null],
        ['reactor:update', 'failure', 'validation_error'],
        ['reactor:delete', 'success', null],
      ]);
    });
  });
});
