import type { Caller } from '../auth/caller.js';
import type { ApplicationRecord, FormulaRecord, ReactorRecord, Store } from '../storage/store.js';
import { mayBindTo } from '../auth/binding-authz.js';
import { formulaOf } from './reactor-lookup.js';
import { type ReactorView, reactorView } from './reactor-views.js';

/**
 * Views of reactors for `caller`, each application shown only to a caller that could bind it.
 * Reactors of a page often share formulas and applications: one loader loads each once.
 */
export function reactorViewLoader(store: Store, caller: Caller): (reactor: ReactorRecord) => Promise<ReactorView> {
  const formulas = new Map<string, FormulaRecord>();
  const applications = new Map<string, { record: ApplicationRecord | null; visible: boolean }>();
  return async (reactor) => {
    let formula: FormulaRecord | null = null;
    if (reactor.formulaId !== null) {
      formula = formulas.get(reactor.formulaId) ?? null;
      if (formula === null) formulas.set(reactor.formulaId, (formula = await formulaOf(store, reactor)));
    }
    let application: { record: ApplicationRecord | null; visible: boolean } = { record: null, visible: true };
    if (reactor.applicationId !== null) {
      const cached = applications.get(reactor.applicationId);
      if (cached !== undefined) application = cached;
      else {
        const record = await store.getApplication(reactor.tenantId, reactor.applicationId);
        application = { record, visible: record === null || mayBindTo(caller, record) };
        applications.set(reactor.applicationId, application);
      }
    }
    return reactorView(reactor, formula, application.record, application.visible);
  };
}
