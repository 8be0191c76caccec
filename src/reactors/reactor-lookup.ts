import type { Caller } from '../auth/caller.js';
import { NotFoundError, ValidationError } from '../errors/errors.js';
import type { ApplicationRecord, FormulaRecord, ReactorRecord, Store } from '../storage/store.js';

/** A reactor of the caller's tenant; another tenant's, or an id that is not a string, is not found. */
export async function findReactor(store: Store, caller: Caller, id: string): Promise<ReactorRecord> {
  const reactor = typeof id === 'string' ? await store.getReactor(caller.tenantId, id) : null;
  if (!reactor) throw new NotFoundError('Reactor', String(id));
  return reactor;
}

/**
 * A reactor of the caller's tenant (as findReactor) and the formula it runs (null for inline code),
 * read together (Store.getReactorAndFormula: one round trip on PostgreSQL).
 */
export async function findReactorAndFormula(store: Store, caller: Caller, id: string): Promise<{ reactor: ReactorRecord; formula: FormulaRecord | null }> {
  const found = typeof id === 'string' ? await store.getReactorAndFormula(caller.tenantId, id) : null;
  if (!found) throw new NotFoundError('Reactor', String(id));
  // The store refuses to delete a formula in use, so this is a broken store, not a user error.
  if (found.reactor.formulaId !== null && found.formula === null) throw new Error(`Reactor ${found.reactor.id} references a missing formula`);
  return found;
}

/** The formula of a reactor that runs one (`formulaId` set). */
export async function formulaOf(store: Store, reactor: ReactorRecord): Promise<FormulaRecord> {
  const formula = reactor.formulaId === null ? null : await store.getFormula(reactor.tenantId, reactor.formulaId);
  // The store refuses to delete a formula in use, so this is a broken store, not a user error.
  if (!formula) throw new Error(`Reactor ${reactor.id} references a missing formula`);
  return formula;
}

/** An application a reactor may act as: of this tenant, of type public or private (docs/reactors.md). */
export async function bindableApplication(store: Store, tenantId: string, id: string | null): Promise<ApplicationRecord | null> {
  if (id === null) return null;
  const app = await store.getApplication(tenantId, id);
  if (!app) throw ValidationError.field('application.id', 'does not name an application of this tenant');
  if (app.type !== 'public' && app.type !== 'private') {
    throw ValidationError.field('application.id', `must be an application of type public or private, not ${app.type}`);
  }
  return app;
}
