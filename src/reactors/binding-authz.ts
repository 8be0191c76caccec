import { type Caller, coversGrants, makeCaller } from '../caller.js';
import { AuthorizationError } from '../errors.js';
import type { ApplicationRecord, CursorPage, FormulaRecord, ReactorRecord, Store } from '../storage/store.js';

/**
 * Who may make code run as an application. A reactor bound to an application acts as it through
 * `req.bt` with the invoker's detokenized args, so binding, rebinding, changing a bound reactor,
 * and changing the code behind a bound reactor all need the caller to hold every grant of that
 * application (coversGrants), or to be a management application (which may change applications
 * anyway). Without this, a reactor:create or reactor:update holder could act as any application of
 * its tenant.
 */
export function mayActAs(caller: Caller, application: ApplicationRecord): boolean {
  return caller.applicationType === 'management' || coversGrants(caller, makeCaller(application));
}

/** AuthorizationError unless the caller may bind a reactor to `application` (named: the caller gave its id). */
export function requireMayBind(caller: Caller, application: ApplicationRecord): void {
  if (!mayActAs(caller, application)) {
    throw new AuthorizationError(`Binding a reactor to application '${application.id}' needs every permission and access grant that application holds`);
  }
}

/**
 * AuthorizationError unless the caller may change a reactor bound to `application`. The message
 * does not name the application: a caller that may not change it may not see it either.
 */
export function requireMayChangeBound(caller: Caller, reactorId: string, application: ApplicationRecord): void {
  if (!mayActAs(caller, application)) {
    throw new AuthorizationError(`Changing reactor '${reactorId}' needs every permission and access grant of the application it is bound to`);
  }
}

/** True when a formula update changes what runs: its code or its declarations (name and description do not). */
export function changesWhatRuns(current: FormulaRecord, next: FormulaRecord): boolean {
  return (
    current.code !== next.code ||
    JSON.stringify(current.configuration) !== JSON.stringify(next.configuration) ||
    JSON.stringify(current.requestParameters) !== JSON.stringify(next.requestParameters)
  );
}

const PAGE: CursorPage = { mode: 'cursor', size: 100 };

/**
 * AuthorizationError unless the caller may act as every application a reactor of `formulaId` is
 * bound to. Walks the tenant's reactors page by page: formula updates are rare, and this keeps the
 * Store interface unchanged. A reactor whose application was deleted binds nothing.
 */
export async function requireMayChangeFormula(store: Store, caller: Caller, formulaId: string): Promise<void> {
  if (caller.applicationType === 'management') return;
  const decided = new Map<string, boolean>();
  let start: string | undefined;
  for (;;) {
    const page = await store.listReactors(caller.tenantId, {}, start === undefined ? PAGE : { ...PAGE, start });
    for (const reactor of page.items) await check(reactor);
    if (page.mode !== 'cursor' || page.next === null) return;
    start = page.next;
  }

  async function check(reactor: ReactorRecord): Promise<void> {
    if (reactor.formulaId !== formulaId || reactor.applicationId === null) return;
    let allowed = decided.get(reactor.applicationId);
    if (allowed === undefined) {
      const application = await store.getApplication(caller.tenantId, reactor.applicationId);
      allowed = application === null || mayActAs(caller, application);
      decided.set(reactor.applicationId, allowed);
    }
    if (!allowed) {
      throw new AuthorizationError(
        `Changing the code or declarations of formula '${formulaId}' needs every permission and access grant of each application its reactors are bound to; reactor '${reactor.id}' is bound to one this application does not cover`,
      );
    }
  }
}
