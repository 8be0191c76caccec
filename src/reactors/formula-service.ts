import { randomUUID } from 'node:crypto';
import { refuseNul } from '../validation/no-nul.js';
import type { AuditLog } from '../audit/audit.js';
import { type Caller, requirePermission } from '../auth/caller.js';
import type { Clock } from '../common/clock.js';
import { ConflictError, NotFoundError, concurrentChange, requireCreated } from '../errors/errors.js';
import { type PageQuery, type Paginated, parsePage, toPaginated } from '../common/pagination.js';
import type { Sandbox, SandboxLimits } from '../sandbox/sandbox.js';
import { checkReactorCode } from './code-check.js';
import { runOwner } from './run-owner.js';
import type { FormulaRecord, Store } from '../storage/store.js';
import { changesWhatRuns, requireMayChangeFormula, requireMayRecode } from '../auth/binding-authz.js';
import { type FormulaRequest, parseFormulaInput } from './formula-input.js';
import { type FormulaView, formulaView } from './reactor-views.js';

export interface FormulaServiceDeps {
  store: Store;
  clock: Clock;
  audit: AuditLog;
  /** The sandbox, created on first need: it checks code on save. */
  sandbox: () => Promise<Sandbox>;
  /** Per-run limit overrides passed to the sandbox (for the load check of saved code). */
  limits?: Partial<SandboxLimits>;
}

/**
 * Reactor formulas: JavaScript code plus the declarations of its configuration and request
 * parameters (docs/reactors.md). Code is checked when it is saved
 * (code-check.ts): a syntax error, or code that does not set `module.exports` to a function, is a
 * ValidationError on `code`, never a failure of every invocation.
 *
 * @example
 * const formula = await vault.formulas.create(caller, {
 *   name: 'echo',
 *   code: 'module.exports = async (req) => ({ raw: req.args })',
 *   request_parameters: [{ name: 'card', type: 'object' }],
 * });
 */
export class FormulaService {
  #store: Store;
  #clock: Clock;
  #audit: AuditLog;
  #sandbox: () => Promise<Sandbox>;
  #limits: Partial<SandboxLimits> | undefined;

  constructor(deps: FormulaServiceDeps) {
    this.#limits = deps.limits;
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#audit = deps.audit;
    this.#sandbox = deps.sandbox;
  }

  /** Creates a formula (reactor:create). */
  async create(caller: Caller, body: FormulaRequest): Promise<FormulaView> {
    return this.#audit.guard(caller, 'formula:create', null, async () => {
      requirePermission(caller, 'reactor:create');
      refuseNul(body, '');
      const input = parseFormulaInput(body);
      await checkReactorCode(await this.#sandbox(), input.code, this.#limits, runOwner(caller));
      const formula: FormulaRecord = {
        id: randomUUID(),
        tenantId: caller.tenantId,
        ...input,
        createdBy: caller.applicationId,
        createdAt: this.#clock.now(),
        modifiedBy: null,
        modifiedAt: null,
      };
      requireCreated(await this.#store.createFormula(formula), 'Formula', formula.id);
      this.#record(caller, 'formula:create', formula.id);
      return formulaView(formula);
    });
  }

  /** Gets a formula of the caller's tenant (reactor:read). */
  async get(caller: Caller, id: string): Promise<FormulaView> {
    return this.#audit.guard(caller, 'formula:read', id, async () => {
      requirePermission(caller, 'reactor:read');
      refuseNul(id, 'id');
      const formula = await this.#find(caller, id);
      this.#record(caller, 'formula:read', formula.id);
      return formulaView(formula);
    });
  }

  /** Lists the tenant's formulas (reactor:read), paginated. */
  async list(caller: Caller, query: PageQuery = {}): Promise<Paginated<FormulaView>> {
    return this.#audit.guard(caller, 'formula:list', null, async () => {
      requirePermission(caller, 'reactor:read');
      const page = parsePage(query ?? {});
      const result = toPaginated(page, await this.#store.listFormulas(caller.tenantId, page), formulaView);
      this.#record(caller, 'formula:list', null);
      return result;
    });
  }

  /**
   * Replaces a formula (reactor:update, PUT: name and code required, absent declarations cleared).
   * Reactors built on it keep their configuration; one that no longer matches the declarations is
   * refused at invocation until it is updated. Changing the code or declarations is for the
   * formula's author or a tenant administrator (its reactors' invokers hand the code their data),
   * and when a reactor bound to an application uses it, needs every grant of that application (or
   * an administrator): that code runs as the application. Name and description alone may always change.
   */
  async update(caller: Caller, id: string, body: FormulaRequest): Promise<FormulaView> {
    return this.#audit.guard(caller, 'formula:update', id, async () => {
      requirePermission(caller, 'reactor:update');
      refuseNul(id, 'id');
      refuseNul(body, '');
      const current = await this.#find(caller, id);
      const input = parseFormulaInput(body);
      (await this.#sandbox()).check(input.code);
      const next: FormulaRecord = { ...current, ...input, modifiedBy: caller.applicationId, modifiedAt: this.#clock.now() };
      const recodes = changesWhatRuns(current, next);
      let boundApplications: string[] | undefined;
      if (recodes) {
        requireMayRecode(caller, 'formula', current);
        boundApplications = await requireMayChangeFormula(this.#store, caller, current.id);
        // After the authorization: the load check runs the code's top level. However long it runs,
        // the write below lands only while the bindings are those just decided on.
        if (next.code !== current.code) await checkReactorCode(await this.#sandbox(), next.code, this.#limits, runOwner(caller));
      }
      // Only while the code, the declarations and the applications its reactors run as are still
      // the ones the checks above were decided on: a reactor bound meanwhile makes it a 409.
      const expected = { ...pickRun(current), ...(boundApplications === undefined ? {} : { boundApplications }) };
      const result = await this.#store.updateFormula(caller.tenantId, current.id, { ...input, modifiedBy: caller.applicationId, modifiedAt: next.modifiedAt! }, expected);
      if (result.status === 'not_found') throw new NotFoundError('Formula', String(id));
      if (result.status === 'changed') throw concurrentChange('Formula', current.id);
      this.#record(caller, 'formula:update', next.id);
      return formulaView(result.record);
    });
  }

  /** Deletes a formula (reactor:delete). ConflictError while a reactor uses it. */
  async delete(caller: Caller, id: string): Promise<void> {
    await this.#audit.guard(caller, 'formula:delete', id, async () => {
      requirePermission(caller, 'reactor:delete');
      refuseNul(id, 'id');
      const outcome = typeof id === 'string' ? await this.#store.deleteFormula(caller.tenantId, id) : 'not_found';
      if (outcome === 'not_found') throw new NotFoundError('Formula', String(id));
      if (outcome === 'in_use') throw new ConflictError(`Formula '${id}' is used by a reactor; delete its reactors first`);
      this.#record(caller, 'formula:delete', id);
    });
  }

  async #find(caller: Caller, id: string): Promise<FormulaRecord> {
    const formula = typeof id === 'string' ? await this.#store.getFormula(caller.tenantId, id) : null;
    if (!formula) throw new NotFoundError('Formula', String(id));
    return formula;
  }

  #record(caller: Caller, operation: string, resourceId: string | null): void {
    this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation, resourceId, outcome: 'success' });
  }
}

function pickRun(formula: FormulaRecord): Pick<FormulaRecord, 'code' | 'configuration' | 'requestParameters'> {
  return { code: formula.code, configuration: formula.configuration, requestParameters: formula.requestParameters };
}
