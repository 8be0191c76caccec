import { beforeEach, describe, expect, it } from 'vitest';
import type { ContainerScope, Store } from '../storage/store.js';
import { APP_B, T0, TENANT_A, makeAudit, makeFormula, makeReactor, makeToken } from './store-fixtures.js';

/*
 * Store conformance for the preconditions the authority rules rely on (docs/authority.md):
 * deduplication only within the scopes given, and a formula update only while its reactors are
 * bound to the applications its caller was checked against. Registered by runStoreConformance.
 */

const stamp = { modifiedBy: APP_B, modifiedAt: T0 + 1 };
const PCI: ContainerScope[] = [{ prefix: '/pci/', except: ['/pci/vault/'] }];

/** Registers the authority part of the Store conformance suite. */
export function authorityConformance(current: () => Store): void {
  let store: Store;
  beforeEach(() => {
    store = current();
  });

  describe('deduplication within scopes', () => {
    const dup = (containers: string[], id: string) => makeToken({ id, fingerprint: 'fp', type: 'card', deduplicate: true, containers });

    it('matches only a token whose every container lies in a scope; otherwise creates', async () => {
      for (const [id, containers] of [
        ['in-vault', ['/pci/vault/']],
        ['mixed', ['/pci/high/', '/bank/']],
        ['outside', ['/bank/']],
      ] as const) {
        expect(await store.createToken({ ...dup([...containers], id), deduplicate: false }, T0)).toEqual({ status: 'created' });
      }
      // None of the three lies wholly within /pci/ minus /pci/vault/: a fourth token is created.
      expect(await store.createToken(dup(['/pci/high/'], 'first-in-scope'), T0, PCI)).toEqual({ status: 'created' });
      const found = await store.createToken(dup(['/pci/low/'], 'second'), T0, PCI);
      expect(found).toMatchObject({ status: 'duplicate', existing: { id: 'first-in-scope' } });
      // No scopes at all: nothing matches. No argument: any token does (the oldest).
      expect(await store.createToken(dup(['/pci/'], 'unscoped-none'), T0, [])).toEqual({ status: 'created' });
      expect(await store.createToken(dup(['/x/'], 'unscoped-any'), T0)).toMatchObject({ status: 'duplicate', existing: { id: 'in-vault' } });
    });

    it('applies to bulk creation and to updates', async () => {
      await store.createToken(dup(['/bank/'], 'outside'), T0);
      const bulk = await store.createTokens([dup(['/pci/a/'], 'b1'), dup(['/pci/b/'], 'b2')], T0, PCI);
      expect(bulk).toMatchObject({ status: 'created', results: [{ status: 'created' }, { status: 'duplicate', existing: { id: 'b1' } }] });
      const other = makeToken({ id: 'other', fingerprint: 'other-fp', type: 'card', containers: ['/pci/c/'] });
      await store.createToken(other, T0);
      const audit = makeAudit({ operation: 'token:update', resourceId: 'other' });
      const next = { ...other, fingerprint: 'fp', deduplicate: true };
      expect(await store.updateToken(next, audit, T0, [{ prefix: '/bank/', except: [] }])).toMatchObject({ status: 'duplicate', existing: { id: 'outside' } });
      expect(await store.updateToken(next, audit, T0, [{ prefix: '/nowhere/', except: [] }])).toEqual({ status: 'updated' });
    });
  });

  describe('formula updates guarded on their bound applications', () => {
    it('writes only while every application its reactors are bound to is among those given', async () => {
      const formula = makeFormula();
      await store.createFormula(formula);
      const run = { code: formula.code, configuration: formula.configuration, requestParameters: formula.requestParameters };
      await store.createReactor(makeReactor({ id: 'unbound', formulaId: formula.id, applicationId: null }));
      await store.createReactor(makeReactor({ id: 'bound', formulaId: formula.id, applicationId: 'app-x' }));
      // Inline reactors and other formulas' reactors do not count.
      await store.createReactor(makeReactor({ id: 'inline', formulaId: null, code: 'module.exports = async () => ({})', applicationId: 'app-y' }));
      expect(await store.updateFormula(TENANT_A, formula.id, { name: 'checked on none', ...stamp }, { ...run, boundApplications: [] })).toEqual({ status: 'changed' });
      expect(await store.updateFormula(TENANT_A, formula.id, { name: 'checked on x', ...stamp }, { ...run, boundApplications: ['app-x'] })).toMatchObject({ status: 'updated' });
      // Rebound meanwhile: the check on app-x no longer holds.
      await store.updateReactor(TENANT_A, 'unbound', { applicationId: 'app-z', ...stamp });
      expect(await store.updateFormula(TENANT_A, formula.id, { name: 'stale', ...stamp }, { ...run, boundApplications: ['app-x'] })).toEqual({ status: 'changed' });
      expect((await store.getFormula(TENANT_A, formula.id))?.name).toBe('checked on x');
      expect(await store.updateFormula(TENANT_A, 'missing', { name: 'x', ...stamp }, { ...run, boundApplications: [] })).toEqual({ status: 'not_found' });
    });
  });
}
