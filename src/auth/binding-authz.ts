import { type Caller, isTenantAdministrator, makeCaller, mayActAs } from './caller.js';
import { AuthorizationError } from '../errors/errors.js';
import type { ApplicationRecord, CursorPage, FormulaRecord, ReactorRecord, Store } from '../storage/store.js';
import { withinBoundGrants } from './session-grants.js';
import { sameJson } from '../common/same-json.js';

/*
 * Who may make code run as an application, or change code that receives other callers' data
 * (docs/authority.md). A reactor bound to an application acts as it through `req.bt` with the
 * invoker's detokenized args, so binding, rebinding, changing a bound reactor, and changing the
 * code behind a bound reactor all need the caller to hold every grant of that application
 * (coversGrants), or to be a tenant administrator. A management permission alone (`reactor:*`) is
 * not administration. And since every invoker hands a reactor its detokenized data, changing what
 * a reactor or formula runs (code, configuration, declarations) is for its author or an
 * administrator only: the invokers trusted the code its author wrote.
 */

/** Whether the caller may make code run as `application` (or see which application a reactor runs as). */
export function mayBindTo(caller: Caller, application: ApplicationRecord): boolean {
  return mayActAs(caller, makeCaller(application));
}

/** Who `req.bt` acts as: the reactor's application as it is now, within the grants it was bound with. */
export function reactorCaller(reactor: ReactorRecord, application: ApplicationRecord): Caller {
  return withinBoundGrants(application, reactor.boundGrants);
}

/** AuthorizationError unless the caller may bind a reactor to `application` (named: the caller gave its id). */
export function requireMayBind(caller: Caller, application: ApplicationRecord): void {
  if (!mayBindTo(caller, application)) {
    throw new AuthorizationError(`Binding a reactor to application '${application.id}' needs every permission and access grant that application holds`);
  }
}

/**
 * AuthorizationError unless the caller may change a reactor bound to `application`. The message
 * does not name the application: a caller that may not change it may not see it either.
 */
export function requireMayChangeBound(caller: Caller, reactorId: string, application: ApplicationRecord): void {
  if (!mayBindTo(caller, application)) {
    throw new AuthorizationError(`Changing reactor '${reactorId}' needs every permission and access grant of the application it is bound to`);
  }
}

/** True when a formula update changes what runs: its code or its declarations (name and description do not). */
export function changesWhatRuns(current: FormulaRecord, next: FormulaRecord): boolean {
  return current.code !== next.code || !sameJson(current.configuration, next.configuration) || !sameJson(current.requestParameters, next.requestParameters);
}

/** True when a reactor update changes what runs: its inline code or its configuration (the values its code is given). */
export function changesReactorRun(current: ReactorRecord, next: Pick<ReactorRecord, 'code' | 'configuration'>): boolean {
  return (next.code !== null && next.code !== current.code) || !sameJson(current.configuration, next.configuration);
}

/**
 * AuthorizationError unless the caller may change what a reactor or formula runs: its author (the
 * application that created it) or a tenant administrator. Anyone else with reactor:update could
 * otherwise have the next honest invocation post the invoker's detokenized data wherever it likes.
 */
export function requireMayRecode(caller: Caller, what: 'reactor' | 'formula', record: ReactorRecord | FormulaRecord): void {
  if (isTenantAdministrator(caller) || (record.createdBy !== null && record.createdBy === caller.applicationId)) return;
  throw new AuthorizationError(
    `Changing the code or configuration of ${what} '${record.id}' is for the application that created it or a tenant administrator: ` +
      'its invokers hand it their detokenized data. Name and application may be changed with reactor:update',
  );
}

const PAGE: CursorPage = { mode: 'cursor', size: 100 };

/**
 * AuthorizationError unless the caller may act as every application a reactor of `formulaId` is
 * bound to; returns the ids of those applications (sorted), so the update can be written only
 * while they are still the ones this was decided on (Store.updateFormula's `boundApplications`).
 * Walks the tenant's reactors page by page: formula updates are rare, and this keeps reads off the
 * Store interface. A reactor whose application was deleted binds nothing.
 */
export async function requireMayChangeFormula(store: Store, caller: Caller, formulaId: string): Promise<string[]> {
  const decided = new Map<string, boolean>();
  let start: string | undefined;
  for (;;) {
    const page = await store.listReactors(caller.tenantId, {}, start === undefined ? PAGE : { ...PAGE, start });
    for (const reactor of page.items) await check(reactor);
    if (page.mode !== 'cursor' || page.next === null) return [...decided.keys()].sort();
    start = page.next;
  }

  async function check(reactor: ReactorRecord): Promise<void> {
    if (reactor.formulaId !== formulaId || reactor.applicationId === null) return;
    let allowed = decided.get(reactor.applicationId);
    if (allowed === undefined) {
      const application = isTenantAdministrator(caller) ? null : await store.getApplication(caller.tenantId, reactor.applicationId);
      allowed = application === null || mayBindTo(caller, application);
      decided.set(reactor.applicationId, allowed);
    }
    if (!allowed) {
      throw new AuthorizationError(
        `Changing the code or declarations of formula '${formulaId}' needs every permission and access grant of each application its reactors are bound to; reactor '${reactor.id}' is bound to one this application does not cover`,
      );
    }
  }
}
