import { randomUUID } from 'node:crypto';
import { refuseNul } from '../validation/no-nul.js';
import type { AuditLog } from '../audit/audit.js';
import { type Caller, requirePermission } from '../auth/caller.js';
import type { Clock } from '../common/clock.js';
import { NotFoundError, ValidationError, concurrentChange, requireCreated } from '../errors/errors.js';
import type { JobQueue } from '../jobs/job-queue.js';
import { type PageQuery, type Paginated, parsePage, toPaginated } from '../common/pagination.js';
import type { Sandbox, SandboxLimits } from '../sandbox/sandbox.js';
import type { ApplicationRecord, FormulaRecord, ReactorRecord, Store } from '../storage/store.js';
import { mergePatch } from '../tokens/merge-patch.js';
import { boundGrantsFor } from '../auth/session-grants.js';
import { changesReactorRun, requireMayBind, requireMayChangeBound, requireMayRecode } from '../auth/binding-authz.js';
import type { ConsoleOutputMode } from './console-output.js';
import { AsyncRuns, type AsyncRunEnded, type ReactorRunAccepted, type ReactorRunFinished, type ReactorRunView, type RecordSealer } from './async-runs.js';
import { checkReactorCode } from './code-check.js';
import { runOwner } from './run-owner.js';
import {
  type CreateReactorRequest,
  type InvokeRequest,
  type PatchReactorRequest,
  type ReactRequest,
  type UpdateReactorRequest,
  checkConfiguration,
  checkInlineConfiguration,
  parseCreateReactor,
  parseInvoke,
  parsePatchReactor,
  parseReactorFilter,
  parseUpdateReactor,
} from './reactor-input.js';
import { bindableApplication, findReactor, formulaOf } from './reactor-lookup.js';
import { type ReactorResponse, ReactorRunner, type ReactorRunnerDeps } from './reactor-runner.js';
import { type ReactorView, reactorView } from './reactor-views.js';
import { reactorViewLoader } from './reactor-view-loader.js';

export { MAX_REACTOR_NESTING, type ReactorResponse } from './reactor-runner.js';

export interface ListReactorsQuery extends PageQuery {
  /** Reactor ids (repeatable). */
  id?: string | string[];
  /** Case-insensitive substring of the name; `*` matches any run of characters. */
  name?: string;
}

/** What the service needs: the runner's needs (reactor-runner.ts) and those of asynchronous runs. */
export interface ReactorServiceDeps extends Omit<ReactorRunnerDeps, 'consoleOutput'> {
  clock: Clock;
  /** What becomes of reactor console output (default `summary`: discarded, only its size logged). */
  consoleOutput?: ConsoleOutputMode;
  /** The job queue asynchronous runs are done by. */
  jobs: JobQueue;
  /** Seals asynchronous runs' args and results with the tenant key. */
  records: RecordSealer;
  /** Whether callback URLs may name loopback and private addresses (the egress option). */
  allowPrivateNetwork: boolean;
  /** Told when an asynchronous run ends (callback and event webhooks). */
  onRunFinished?: (event: ReactorRunFinished) => Promise<void>;
  /** The `reactors.onAsyncRun` option (metrics). */
  onAsyncRun?: (event: AsyncRunEnded) => void;
}

/**
 * Reactors (docs/reactors.md): a formula configured for use, optionally bound to an application that its
 * code acts as through `req.bt`. Invocation detokenizes the args, validates them against the
 * formula's request parameters, runs the code in the sandbox and tokenizes its `tokenize` block.
 *
 * @example
 * const reactor = await vault.reactors.create(admin, { name: 'charge', formula: { id: formula.id }, configuration: {}, application: { id: app.id } });
 * const { raw, tokens } = await vault.reactors.react(caller, reactor.id, { args: { card: `{{ ${token.id} }}` } });
 */
export class ReactorService {
  #store: Store;
  #clock: Clock;
  #audit: AuditLog;
  #sandbox: () => Promise<Sandbox>;
  #limits: Partial<SandboxLimits> | undefined;
  #runner: ReactorRunner;
  #async: AsyncRuns;

  constructor(deps: ReactorServiceDeps) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#audit = deps.audit;
    this.#sandbox = deps.sandbox;
    this.#limits = deps.limits;
    const runner = (this.#runner = new ReactorRunner({ ...deps, consoleOutput: deps.consoleOutput ?? 'summary' }));
    this.#async = new AsyncRuns(
      {
        store: deps.store,
        clock: deps.clock,
        jobs: deps.jobs,
        records: deps.records,
        allowPrivateNetwork: deps.allowPrivateNetwork,
        logger: deps.logger,
        ...(deps.onRunFinished ? { onRunFinished: deps.onRunFinished } : {}),
        ...(deps.onAsyncRun ? { onAsyncRun: deps.onAsyncRun } : {}),
      },
      {
        check: async (caller, id, input) => void (await runner.prepare(caller, id, input, 0)),
        run: (caller, id, input) => runner.invoke(caller, id, input, 0, input.timeoutMs),
      },
    );
  }

  /**
   * Creates a reactor (reactor:create): from a formula of the tenant, with a configuration that
   * matches its declarations (docs/reactors.md), or with its own inline `code` (checked as a formula's is:
   * it must compile and export a function) and any configuration of scalar values.
   */
  async create(caller: Caller, body: CreateReactorRequest): Promise<ReactorView> {
    return this.#audit.guard(caller, 'reactor:create', null, async () => {
      requirePermission(caller, 'reactor:create');
      refuseNul(body, '');
      const input = parseCreateReactor(body);
      let formula: FormulaRecord | null = null;
      let configuration: Record<string, unknown>;
      if ('formulaId' in input.source) {
        formula = await this.#store.getFormula(caller.tenantId, input.source.formulaId);
        if (!formula) throw ValidationError.field('formula.id', 'does not name a formula of this tenant');
        configuration = checkConfiguration(input.configuration ?? {}, formula.configuration);
      } else configuration = checkInlineConfiguration(input.configuration ?? {});
      const application = await bindableApplication(this.#store, caller.tenantId, input.applicationId);
      if (application) requireMayBind(caller, application);
      const code = 'code' in input.source ? input.source.code : null;
      // Last: it runs the code's top level, which a refused caller should not get to do.
      if (code !== null) await checkReactorCode(await this.#sandbox(), code, this.#limits, runOwner(caller));
      const reactor: ReactorRecord = {
        id: randomUUID(),
        tenantId: caller.tenantId,
        name: input.name,
        formulaId: formula?.id ?? null,
        code,
        configuration,
        applicationId: application?.id ?? null,
        boundGrants: application ? boundGrantsFor(caller, application) : null,
        createdBy: caller.applicationId,
        createdAt: this.#clock.now(),
        modifiedBy: null,
        modifiedAt: null,
      };
      requireCreated(await this.#store.createReactor(reactor), 'Reactor', reactor.id);
      this.#record(caller, 'reactor:create', reactor.id);
      return reactorView(reactor, formula, application, true);
    });
  }

  /** Gets a reactor of the caller's tenant (reactor:read); another tenant's is not found. */
  async get(caller: Caller, id: string): Promise<ReactorView> {
    return this.#audit.guard(caller, 'reactor:read', id, async () => {
      requirePermission(caller, 'reactor:read');
      refuseNul(id, 'id');
      const reactor = await findReactor(this.#store, caller, id);
      const view = await reactorViewLoader(this.#store, caller)(reactor);
      this.#record(caller, 'reactor:read', reactor.id);
      return view;
    });
  }

  /** Lists reactors (reactor:read), filtered by ids and a name pattern, paginated. */
  async list(caller: Caller, query: ListReactorsQuery = {}): Promise<Paginated<ReactorView>> {
    return this.#audit.guard(caller, 'reactor:list', null, async () => {
      requirePermission(caller, 'reactor:read');
      refuseNul(query, '');
      const q = query ?? {};
      const filter = parseReactorFilter(q);
      const page = parsePage(q);
      const result = await this.#store.listReactors(caller.tenantId, filter, page);
      const load = reactorViewLoader(this.#store, caller);
      const views = new Map<ReactorRecord, ReactorView>();
      for (const reactor of result.items) views.set(reactor, await load(reactor));
      this.#record(caller, 'reactor:list', null);
      return toPaginated(page, result, (reactor) => views.get(reactor) ?? null);
    });
  }

  /**
   * Replaces a reactor's name, configuration, application and (inline-code reactors) code
   * (reactor:update, PUT). The formula cannot change. A reactor bound to an application (before or
   * after) may only be changed by a caller that holds every grant of that application, or a tenant
   * administrator: its code runs as that application. Changing its code or configuration (which
   * steers where the data its code sees goes) is for its author or an administrator
   * (binding-authz.ts).
   */
  async update(caller: Caller, id: string, body: UpdateReactorRequest): Promise<ReactorView> {
    return this.#audit.guard(caller, 'reactor:update', id, async () => {
      requirePermission(caller, 'reactor:update');
      refuseNul(id, 'id');
      refuseNul(body, '');
      const current = await findReactor(this.#store, caller, id);
      const bound = await this.#requireMayChange(caller, current);
      const input = parseUpdateReactor(body, current.formulaId === null);
      const formula = current.formulaId === null ? null : await formulaOf(this.#store, current);
      const configuration = formula ? checkConfiguration(input.configuration ?? {}, formula.configuration) : checkInlineConfiguration(input.configuration ?? {});
      if (changesReactorRun(current, { code: input.code, configuration })) requireMayRecode(caller, 'reactor', current);
      const application = await bindableApplication(this.#store, caller.tenantId, input.applicationId);
      if (application && application.id !== bound?.id) requireMayBind(caller, application);
      return this.#save(caller, current, { name: input.name, configuration, code: input.code, applicationId: application?.id ?? null }, formula, application, true);
    });
  }

  /**
   * Changes what a JSON merge patch (RFC 7386) names of a reactor (reactor:update, PATCH): `name`,
   * `configuration` (merged into the current one, then checked like a PUT's), `code` (inline-code
   * reactors) and `application` (null removes it). The same rules as PUT hold: changing a bound
   * reactor in any way needs every grant of its application, and changing code or configuration
   * needs its author or an administrator.
   */
  async patch(caller: Caller, id: string, body: PatchReactorRequest): Promise<ReactorView> {
    return this.#audit.guard(caller, 'reactor:update', id, async () => {
      requirePermission(caller, 'reactor:update');
      refuseNul(id, 'id');
      refuseNul(body, '');
      const current = await findReactor(this.#store, caller, id);
      const bound = await this.#requireMayChange(caller, current);
      const patch = parsePatchReactor(body, current.formulaId === null);
      const formula = current.formulaId === null ? null : await formulaOf(this.#store, current);
      const merged =
        patch.configuration === undefined
          ? current.configuration
          : patch.configuration === null
            ? {}
            : (mergePatch(current.configuration, patch.configuration) as Record<string, unknown>);
      const configuration = formula ? checkConfiguration(merged, formula.configuration) : checkInlineConfiguration(merged);
      const code = patch.code ?? current.code;
      if (changesReactorRun(current, { code, configuration })) requireMayRecode(caller, 'reactor', current);
      let application = bound;
      if (patch.applicationId !== undefined) {
        application = await bindableApplication(this.#store, caller.tenantId, patch.applicationId);
        if (application && application.id !== bound?.id) requireMayBind(caller, application);
      }
      return this.#save(
        caller,
        current,
        { name: patch.name ?? current.name, configuration, code, applicationId: application?.id ?? null },
        formula,
        application,
        patch.applicationId !== undefined,
      );
    });
  }

  /**
   * Refuses a change to a reactor bound to an application the caller does not cover, before its
   * input is looked at; returns that application (null: unbound, or its application is gone).
   */
  async #requireMayChange(caller: Caller, current: ReactorRecord): Promise<ApplicationRecord | null> {
    const bound = current.applicationId === null ? null : await this.#store.getApplication(current.tenantId, current.applicationId);
    if (bound) requireMayChangeBound(caller, current.id, bound);
    return bound;
  }

  /**
   * Writes an update (PUT or PATCH); new inline code is checked first, as at create. An update
   * that names the application (`bind`) binds anew: the reactor then acts with no more than the
   * caller could give it (boundGrantsFor).
   */
  async #save(
    caller: Caller,
    current: ReactorRecord,
    change: Pick<ReactorRecord, 'name' | 'configuration' | 'code' | 'applicationId'>,
    formula: FormulaRecord | null,
    application: ApplicationRecord | null,
    bind: boolean,
  ): Promise<ReactorView> {
    if (change.code !== null && change.code !== current.code) await checkReactorCode(await this.#sandbox(), change.code, this.#limits, runOwner(caller));
    const { code, ...rest } = change;
    // Only while the reactor is still bound as it was when the caller's grants were checked.
    const result = await this.#store.updateReactor(
      caller.tenantId,
      current.id,
      {
        ...rest,
        ...(code !== null && code !== current.code ? { code } : {}),
        ...(bind ? { boundGrants: application ? boundGrantsFor(caller, application) : null } : {}),
        modifiedBy: caller.applicationId,
        modifiedAt: this.#clock.now(),
      },
      { applicationId: current.applicationId },
    );
    if (result.status === 'not_found') throw new NotFoundError('Reactor', current.id);
    if (result.status === 'changed') throw concurrentChange('Reactor', current.id);
    this.#record(caller, 'reactor:update', current.id);
    return reactorView(result.record, formula, application, true);
  }

  /** Deletes a reactor (reactor:delete). */
  async delete(caller: Caller, id: string): Promise<void> {
    await this.#audit.guard(caller, 'reactor:delete', id, async () => {
      requirePermission(caller, 'reactor:delete');
      refuseNul(id, 'id');
      if (typeof id !== 'string' || !(await this.#store.deleteReactor(caller.tenantId, id))) throw new NotFoundError('Reactor', String(id));
      this.#record(caller, 'reactor:delete', id);
    });
  }

  /**
   * Invokes a reactor synchronously (token:use; docs/reactors.md "Invoke a Reactor"). Body: `{ args?,
   * timeout_ms? }`. Every token named in args needs token:use on all its containers; a denied or
   * unknown token fails the whole call before any code runs. For an asynchronous run use reactAsync
   * (or `invoke` with a `callback_url`).
   */
  async react(caller: Caller, id: string, body?: ReactRequest): Promise<ReactorResponse> {
    const request = parseInvoke(body);
    if (request.callbackUrl !== null) throw ValidationError.field('callback_url', 'asks for an asynchronous run: call reactAsync (or invoke) instead of react');
    return this.#runner.invoke(caller, id, request, 0);
  }

  /**
   * Spec 4.2 as the HTTP API has it: a synchronous run, or with `callback_url` an asynchronous one
   * (the answer is then the accepted request, and the result is delivered to the URL).
   */
  async invoke(caller: Caller, id: string, body?: ReactRequest): Promise<ReactorResponse | ReactorRunAccepted> {
    const request = parseInvoke(body);
    if (request.callbackUrl !== null) return this.#accept(caller, id, request);
    return this.#runner.invoke(caller, id, request, 0);
  }

  /**
   * Invokes a reactor asynchronously (token:use; `POST /reactors/{id}/react-async`): every check of
   * a synchronous call is made now, then the run is stored and done by the job worker, as the
   * caller's application with its grants at that time, bounded by `timeout_ms`. The result is read
   * with `result` (by this application only) for 24 hours, and announced by webhook.
   */
  async reactAsync(caller: Caller, id: string, body?: ReactRequest): Promise<ReactorRunAccepted> {
    return this.#accept(caller, id, parseInvoke(body));
  }

  /** An asynchronous run's status and result (token:use), for the application that requested it; others get not found. */
  async result(caller: Caller, id: string, requestId: string): Promise<ReactorRunView> {
    return this.#audit.guard(caller, 'reactor:result', requestId, async () => {
      requirePermission(caller, 'token:use');
      refuseNul({ id, request_id: requestId }, '');
      const view = await this.#async.result(caller, id, requestId);
      this.#record(caller, 'reactor:result', requestId);
      return view;
    });
  }

  async #accept(caller: Caller, id: string, request: InvokeRequest): Promise<ReactorRunAccepted> {
    return this.#audit.guard(caller, 'reactor:invoke_async', id, async () => {
      requirePermission(caller, 'token:use');
      const accepted = await this.#async.accept(caller, id, { args: request.args, timeoutMs: request.timeoutMs }, request.callbackUrl);
      this.#record(caller, 'reactor:invoke_async', accepted.id);
      return accepted;
    });
  }

  #record(caller: Caller, operation: string, resourceId: string | null): void {
    this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation, resourceId, outcome: 'success' });
  }
}
