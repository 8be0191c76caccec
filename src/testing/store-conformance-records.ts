import { beforeEach, describe, expect, it } from 'vitest';
import type { ApplicationRecord, FormulaRecord, ReactorRecord, Store } from '../storage/store.js';
import { APP_A, APP_B, T0, TENANT_A, TENANT_B, cursor, makeApplication, makeApplicationKey, makeFormula, makeReactor, offset } from './store-fixtures.js';

/** Registers the Store conformance tests of applications, formulas and reactors (see runStoreConformance). */
export function recordConformance(current: () => Store): void {
  let store: Store;
  beforeEach(() => {
    store = current();
  });

  describe('applications', () => {
    const createApp = (app: ApplicationRecord) => Promise.resolve().then(() => store.createApplication(app, makeApplicationKey(app)));

    it("creates and gets an application; a duplicate id answers 'exists'", async () => {
      const app = makeApplication();
      await createApp(app);
      expect(await store.getApplication(TENANT_A, app.id)).toEqual(app);
      expect(await createApp({ ...app, name: 'again' })).toBe('exists');
      expect((await store.getApplication(TENANT_A, app.id))?.name).toBe(app.name);
    });

    it('is scoped by tenant: never read, changed or removed through another tenant', async () => {
      const b = makeApplication({ tenantId: TENANT_B });
      await createApp(b);
      expect(await store.getApplication(TENANT_A, b.id)).toBeNull();
      expect(await store.updateApplication(TENANT_A, b.id, { name: 'hijacked', modifiedBy: APP_A, modifiedAt: T0 })).toEqual({ status: 'not_found' });
      expect(await store.deleteApplication(TENANT_A, b.id)).toBe('not_found');
      expect(await store.getApplication(TENANT_B, b.id)).toEqual(b);
      expect((await store.listApplications(TENANT_A, cursor(10))).items).toEqual([]);
    });

    it('finds application keys, with their application, by key lookup across tenants', async () => {
      const a = makeApplication();
      const b = makeApplication({ tenantId: TENANT_B });
      const other = makeApplication();
      const keyA = makeApplicationKey(a, { keyHash: 'aaaabbbbccccdddd'.padEnd(64, '1') });
      const keyB = makeApplicationKey(b, { keyHash: 'aaaabbbbccccdddd'.padEnd(64, '2') });
      await store.createApplication(a, keyA);
      await store.createApplication(b, keyB);
      await createApp(other);
      const found = await store.findApplicationKeys('aaaabbbbccccdddd');
      expect(found.sort((x, y) => x.key.keyHash.localeCompare(y.key.keyHash))).toEqual([
        { key: keyA, application: a },
        { key: keyB, application: b },
      ]);
      expect(await store.findApplicationKeys('ffffffffffffffff')).toEqual([]);
    });

    it('creates nothing when the application id exists (the key is not added either)', async () => {
      const app = makeApplication();
      await createApp(app);
      const stray = makeApplicationKey(app);
      expect(await store.createApplication({ ...app, name: 'again' }, stray)).toBe('exists');
      expect(await store.getApplicationKey(TENANT_A, app.id, stray.id)).toBeNull();
      expect(await store.findApplicationKeys(stray.keyLookup)).toEqual([]);
    });

    it('lists in creation order with both paging modes', async () => {
      const apps = ['m', 'k', 'z'].map((id) => makeApplication({ id }));
      for (const app of apps) await createApp(app);
      const one = await store.listApplications(TENANT_A, cursor(2));
      if (one.mode !== 'cursor') throw new Error('cursor mode expected');
      expect(one.items).toEqual(apps.slice(0, 2));
      const two = await store.listApplications(TENANT_A, cursor(2, one.next!));
      expect(two).toEqual({ mode: 'cursor', items: apps.slice(2), next: null });
      expect(await store.listApplications(TENANT_A, offset(2, 2))).toEqual({ mode: 'offset', items: apps.slice(2), totalItems: 3 });
    });

    it('updates everything but the identity and creation stamp; false when missing', async () => {
      const app = makeApplication({ createdBy: APP_B });
      await createApp(app);
      const changes = { name: 'Renamed', permissions: ['token:read' as const], rules: [], allowedOrigins: ['https://shop.example'], modifiedBy: APP_B, modifiedAt: T0 + 1 };
      const next: ApplicationRecord = { ...app, ...changes };
      expect(await store.updateApplication(TENANT_A, app.id, changes)).toEqual({ status: 'updated', record: next });
      expect(await store.getApplication(TENANT_A, app.id)).toEqual(next);
      expect(await store.updateApplication(TENANT_A, 'missing', { name: 'x', modifiedBy: null, modifiedAt: T0 })).toEqual({ status: 'not_found' });
      expect(await store.getApplication(TENANT_A, 'missing')).toBeNull();
    });

    it('deletes once, with its keys', async () => {
      const app = makeApplication();
      const key = makeApplicationKey(app);
      await store.createApplication(app, key);
      expect(await store.deleteApplication(TENANT_A, app.id)).toBe('deleted');
      expect(await store.getApplication(TENANT_A, app.id)).toBeNull();
      expect(await store.deleteApplication(TENANT_A, app.id)).toBe('not_found');
      expect(await store.findApplicationKeys(key.keyLookup)).toEqual([]);
      expect(await store.listApplicationKeys(TENANT_A, app.id)).toEqual([]);
    });

    const ADMIN: ApplicationRecord['permissions'] = ['application:create', 'application:update', 'application:read', 'application:delete'];
    const KEEP = ['application:create', 'application:update'] as const;
    const admin = (overrides: Partial<ApplicationRecord> = {}) => makeApplication({ type: 'management', permissions: ADMIN, rules: [], ...overrides });

    it("with keep: refuses to delete, or update away the permissions of, the tenant's last holder; others pass", async () => {
      const last = admin();
      const other = makeApplication();
      const elsewhere = admin({ tenantId: TENANT_B });
      for (const app of [last, other, elsewhere]) await createApp(app);
      expect(await store.deleteApplication(TENANT_A, last.id, KEEP)).toBe('last_holder');
      expect(await store.updateApplication(TENANT_A, last.id, { permissions: ['application:create', 'application:read'], modifiedBy: null, modifiedAt: T0 }, KEEP)).toEqual({
        status: 'last_holder',
      });
      expect(await store.getApplication(TENANT_A, last.id)).toMatchObject({ permissions: ADMIN });
      // Changes that keep a holder, and changes of other applications, pass.
      expect(await store.updateApplication(TENANT_A, last.id, { name: 'renamed', permissions: ADMIN, modifiedBy: null, modifiedAt: T0 }, KEEP)).toMatchObject({
        status: 'updated',
      });
      expect(await store.deleteApplication(TENANT_A, other.id, KEEP)).toBe('deleted');
      expect(await store.deleteApplication(TENANT_A, 'missing', KEEP)).toBe('not_found');
      const second = admin();
      await createApp(second);
      expect(await store.deleteApplication(TENANT_A, last.id, KEEP)).toBe('deleted');
      expect(await store.deleteApplication(TENANT_A, second.id, KEEP)).toBe('last_holder');
      // Without keep, nothing is checked.
      expect(await store.deleteApplication(TENANT_A, second.id)).toBe('deleted');
    });

    it('with keep: two last holders removing each other concurrently leave one (race)', async () => {
      for (let i = 0; i < 10; i++) {
        const a = admin();
        const b = admin();
        await createApp(a);
        await createApp(b);
        const results = await Promise.all([
          Promise.resolve().then(() => store.deleteApplication(TENANT_A, a.id, KEEP)),
          i % 2 === 0
            ? store.deleteApplication(TENANT_A, b.id, KEEP)
            : store.updateApplication(TENANT_A, b.id, { permissions: [], modifiedBy: null, modifiedAt: T0 }, KEEP).then((r) => r.status),
        ]);
        expect(results.filter((r) => r === 'last_holder')).toHaveLength(1);
        const page = await store.listApplications(TENANT_A, offset(100, 1));
        const holders = page.items.filter((app) => KEEP.every((p) => app.permissions.includes(p)));
        expect(holders).toHaveLength(1);
        for (const app of page.items) await store.deleteApplication(TENANT_A, app.id);
      }
    });

    it('keeps ids per tenant: the same id may exist in two tenants', async () => {
      await createApp(makeApplication({ id: 'same-app', name: 'A' }));
      await createApp(makeApplication({ id: 'same-app', name: 'B', tenantId: TENANT_B }));
      expect((await store.getApplication(TENANT_A, 'same-app'))?.name).toBe('A');
      expect((await store.getApplication(TENANT_B, 'same-app'))?.name).toBe('B');
    });
  });

  describe('formulas', () => {
    it("creates, gets, updates and lists formulas; a duplicate id answers 'exists'", async () => {
      const formula = makeFormula({ description: null });
      await store.createFormula(formula);
      expect(await store.getFormula(TENANT_A, formula.id)).toEqual(formula);
      expect(await store.createFormula(formula)).toBe('exists');
      const changes = {
        name: 'Refund',
        description: 'Refunds',
        code: 'module.exports = async () => ({ raw: 1 });',
        configuration: [],
        requestParameters: [{ name: 'amount', description: null, type: 'number' as const, optional: true }],
        modifiedBy: APP_B,
        modifiedAt: T0 + 1,
      };
      const next: FormulaRecord = { ...formula, ...changes };
      expect(await store.updateFormula(TENANT_A, formula.id, changes)).toEqual({ status: 'updated', record: next });
      expect(await store.getFormula(TENANT_A, formula.id)).toEqual(next);
      expect(await store.updateFormula(TENANT_A, 'missing', changes)).toEqual({ status: 'not_found' });
      const second = makeFormula();
      await store.createFormula(second);
      expect((await store.listFormulas(TENANT_A, cursor(10))).items.map((f) => f.id)).toEqual([formula.id, second.id]);
      expect(await store.listFormulas(TENANT_A, offset(1, 2))).toEqual({ mode: 'offset', items: [second], totalItems: 2 });
    });

    it('is scoped by tenant', async () => {
      const b = makeFormula({ tenantId: TENANT_B });
      await store.createFormula(b);
      expect(await store.getFormula(TENANT_A, b.id)).toBeNull();
      expect(await store.updateFormula(TENANT_A, b.id, { name: 'hijacked', modifiedBy: null, modifiedAt: T0 })).toEqual({ status: 'not_found' });
      expect(await store.deleteFormula(TENANT_A, b.id)).toBe('not_found');
      expect(await store.getFormula(TENANT_B, b.id)).toEqual(b);
      expect((await store.listFormulas(TENANT_A, cursor(10))).items).toEqual([]);
    });

    it('deleteFormula: in_use while a reactor of the tenant references it, then deleted, then not_found', async () => {
      const formula = makeFormula();
      await store.createFormula(formula);
      const reactor = makeReactor({ formulaId: formula.id });
      await store.createReactor(reactor);
      expect(await store.deleteFormula(TENANT_A, formula.id)).toBe('in_use');
      expect(await store.getFormula(TENANT_A, formula.id)).toEqual(formula);
      expect(await store.deleteReactor(TENANT_A, reactor.id)).toBe(true);
      expect(await store.deleteFormula(TENANT_A, formula.id)).toBe('deleted');
      expect(await store.getFormula(TENANT_A, formula.id)).toBeNull();
      expect(await store.deleteFormula(TENANT_A, formula.id)).toBe('not_found');
    });

    it('a reactor of another tenant does not hold a formula', async () => {
      const formula = makeFormula({ id: 'shared-formula' });
      await store.createFormula(formula);
      await store.createFormula(makeFormula({ id: 'shared-formula', tenantId: TENANT_B }));
      await store.createReactor(makeReactor({ formulaId: 'shared-formula', tenantId: TENANT_B }));
      expect(await store.deleteFormula(TENANT_A, formula.id)).toBe('deleted');
      expect(await store.deleteFormula(TENANT_B, formula.id)).toBe('in_use');
    });
  });

  describe('reactors', () => {
    const formulaId = 'the-formula';
    beforeEach(async () => {
      await store.createFormula(makeFormula({ id: formulaId }));
    });

    it("creates, gets, updates and deletes; a duplicate id answers 'exists'", async () => {
      const reactor = makeReactor({ formulaId, applicationId: APP_A });
      await store.createReactor(reactor);
      expect(await store.getReactor(TENANT_A, reactor.id)).toEqual(reactor);
      expect(await store.createReactor(reactor)).toBe('exists');
      const changes = { name: 'Renamed', configuration: { API_KEY: 'other', n: 2 }, applicationId: null, modifiedBy: APP_B, modifiedAt: T0 + 1 };
      const next: ReactorRecord = { ...reactor, ...changes };
      expect(await store.updateReactor(TENANT_A, reactor.id, changes)).toEqual({ status: 'updated', record: next });
      expect(await store.getReactor(TENANT_A, reactor.id)).toEqual(next);
      expect(await store.updateReactor(TENANT_A, 'missing', changes)).toEqual({ status: 'not_found' });
      expect(await store.deleteReactor(TENANT_A, reactor.id)).toBe(true);
      expect(await store.getReactor(TENANT_A, reactor.id)).toBeNull();
      expect(await store.deleteReactor(TENANT_A, reactor.id)).toBe(false);
    });

    it('getReactorAndFormula answers a reactor with its formula, inline code with none, and null for another tenant or a missing id', async () => {
      const formula = (await store.getFormula(TENANT_A, formulaId))!;
      const reactor = makeReactor({ formulaId, applicationId: APP_A });
      const inline = makeReactor({ formulaId: null, code: 'module.exports = async () => ({ raw: 1 })' });
      await store.createReactor(reactor);
      await store.createReactor(inline);
      expect(await store.getReactorAndFormula(TENANT_A, reactor.id)).toEqual({ reactor, formula });
      expect(await store.getReactorAndFormula(TENANT_A, inline.id)).toEqual({ reactor: inline, formula: null });
      expect(await store.getReactorAndFormula(TENANT_B, reactor.id)).toBeNull();
      expect(await store.getReactorAndFormula(TENANT_A, 'missing')).toBeNull();
    });

    it('a reactor with inline code references no formula; its code round-trips and updates', async () => {
      const reactor = makeReactor({ formulaId: null, code: 'module.exports = async () => ({ raw: 1 })' });
      await store.createReactor(reactor);
      expect(await store.getReactor(TENANT_A, reactor.id)).toEqual(reactor);
      const changes = { code: 'module.exports = async () => ({ raw: 2 })', modifiedBy: APP_B, modifiedAt: T0 + 1 };
      const next: ReactorRecord = { ...reactor, ...changes };
      expect(await store.updateReactor(TENANT_A, reactor.id, changes)).toEqual({ status: 'updated', record: next });
      expect(await store.getReactor(TENANT_A, reactor.id)).toEqual(next);
      expect((await store.listReactors(TENANT_A, { ids: [reactor.id] }, cursor(10))).items).toEqual([next]);
      // It holds no formula: the tenant's formula is deleted while it exists.
      const free = makeFormula();
      await store.createFormula(free);
      expect(await store.deleteFormula(TENANT_A, free.id)).toBe('deleted');
    });

    it('is scoped by tenant', async () => {
      const b = makeReactor({ formulaId, tenantId: TENANT_B, name: 'Tenant B reactor' });
      await store.createReactor(b);
      expect(await store.getReactor(TENANT_A, b.id)).toBeNull();
      expect(await store.updateReactor(TENANT_A, b.id, { name: 'hijacked', modifiedBy: null, modifiedAt: T0 })).toEqual({ status: 'not_found' });
      expect(await store.deleteReactor(TENANT_A, b.id)).toBe(false);
      expect(await store.getReactor(TENANT_B, b.id)).toEqual(b);
      expect((await store.listReactors(TENANT_A, {}, cursor(10))).items).toEqual([]);
      expect((await store.listReactors(TENANT_A, { ids: [b.id], name: 'tenant' }, cursor(10))).items).toEqual([]);
    });

    const NAMES = ['Stripe Payments', 'stripe refunds', 'Adyen PAYMENTS', '100% Sure', '1000 items', 'snake_case', 'snakeXcase', 'back\\slash'];
    const namesOf = async (filter: { ids?: string[]; name?: string }) => (await store.listReactors(TENANT_A, filter, cursor(100))).items.map((r) => r.name);

    it('filters by name: case-insensitive substring where * matches any run of characters', async () => {
      for (const name of NAMES) await store.createReactor(makeReactor({ formulaId, name }));
      await store.createReactor(makeReactor({ formulaId, name: 'Stripe Payments', tenantId: TENANT_B }));
      expect(await namesOf({ name: 'STRIPE' })).toEqual(['Stripe Payments', 'stripe refunds']);
      expect(await namesOf({ name: 'payments' })).toEqual(['Stripe Payments', 'Adyen PAYMENTS']);
      expect(await namesOf({ name: 'stripe*ments' })).toEqual(['Stripe Payments']);
      expect(await namesOf({ name: 's*e*s' })).toEqual(['Stripe Payments', 'stripe refunds', 'snake_case', 'snakeXcase']);
      expect(await namesOf({ name: '*' })).toEqual(NAMES);
      expect(await namesOf({ name: 'nothing like it' })).toEqual([]);
    });

    it('treats % and _ and \\ in the name filter as themselves, not as wildcards', async () => {
      for (const name of NAMES) await store.createReactor(makeReactor({ formulaId, name }));
      expect(await namesOf({ name: '100%' })).toEqual(['100% Sure']);
      expect(await namesOf({ name: '%' })).toEqual(['100% Sure']);
      expect(await namesOf({ name: 'snake_case' })).toEqual(['snake_case']);
      expect(await namesOf({ name: '_' })).toEqual(['snake_case']);
      expect(await namesOf({ name: '\\' })).toEqual(['back\\slash']);
    });

    it('filters by ids, and by ids and name together; lists in creation order with both paging modes', async () => {
      const reactors = [];
      for (const name of ['one', 'two', 'three']) {
        const reactor = makeReactor({ formulaId, name });
        await store.createReactor(reactor);
        reactors.push(reactor);
      }
      const [one, two, three] = reactors;
      expect(await namesOf({ ids: [three!.id, one!.id, 'unknown'] })).toEqual(['one', 'three']);
      expect(await namesOf({ ids: [three!.id, one!.id], name: 'thr' })).toEqual(['three']);
      const first = await store.listReactors(TENANT_A, {}, cursor(2));
      if (first.mode !== 'cursor') throw new Error('cursor mode expected');
      expect(first.items).toEqual([one, two]);
      expect(await store.listReactors(TENANT_A, {}, cursor(2, first.next!))).toEqual({ mode: 'cursor', items: [three], next: null });
      expect(await store.listReactors(TENANT_A, { name: 't' }, offset(1, 2))).toEqual({ mode: 'offset', items: [three], totalItems: 2 });
    });
  });
}
