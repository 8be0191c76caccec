import { randomUUID } from 'node:crypto';
import { refuseNul } from '../validation/no-nul.js';
import type { AuditLog } from '../audit.js';
import { type Caller, makeCaller, requirePermission } from '../caller.js';
import type { Clock } from '../clock.js';
import { ConflictError, NotFoundError, ValidationError, concurrentChange } from '../errors.js';
import type { ExpressionEngine } from '../expressions/engine.js';
import type { Logger } from '../logger.js';
import { type PageQuery, type Paginated, parsePage, toPaginated } from '../pagination.js';
import type { HostFetch, Sandbox, SandboxLimits } from '../sandbox/sandbox.js';
import type { ApplicationRecord, FormulaRecord, ReactorFilter, ReactorRecord, Store } from '../storage/store.js';
import type { TokenService } from '../tokens/token-service.js';
import { validateArgs } from './args.js';
import { mayActAs, requireMayBind, requireMayChangeBound } from './binding-authz.js';
import { createBtTree } from './bt-bridge.js';
import { type ConsoleOutputMode, SensitiveValues, logConsoleOutput } from './console-output.js';
import { applyDetokenize, planDetokenize } from './detokenize.js';
import { checkConfiguration, parseCreateReactor, parseInvoke, parseUpdateReactor } from './reactor-input.js';
import { readReactorOutput } from './reactor-result.js';
import { type ReactorView, reactorView } from './reactor-views.js';

/** How deep `bt.reactors.react` may nest reactor runs (the top-level invocation is depth 0). */
export const MAX_REACTOR_NESTING = 3;

export interface ListReactorsQuery extends PageQuery {
  /** Reactor ids (repeatable). */
  id?: string | string[];
  /** Case-insensitive substring of the name; `*` matches any run of characters. */
  name?: string;
}

/** The Reactor Response object (spec 2.5). */
export interface ReactorResponse {
  raw?: unknown;
  tokens?: unknown;
}

export interface ReactorServiceDeps {
  store: Store;
  clock: Clock;
  audit: AuditLog;
  logger: Logger;
  tokens: TokenService;
  expressions: ExpressionEngine;
  /** The sandbox, created on first need. */
  sandbox: () => Promise<Sandbox>;
  /** The egress-checked fetch given to reactor code; null: fetch rejects. */
  fetch: HostFetch | null;
  /** Per-run limit overrides passed to the sandbox. */
  limits?: Partial<SandboxLimits>;
  /** What becomes of reactor console output (default `summary`: discarded, only its size logged). */
  consoleOutput?: ConsoleOutputMode;
}

/**
 * Reactors (spec 2.3, 4.2): a formula configured for use, optionally bound to an application that its
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
  #logger: Logger;
  #tokens: TokenService;
  #engine: ExpressionEngine;
  #sandbox: () => Promise<Sandbox>;
  #fetch: HostFetch | null;
  #limits: Partial<SandboxLimits> | undefined;
  #consoleOutput: ConsoleOutputMode;

  constructor(deps: ReactorServiceDeps) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#audit = deps.audit;
    this.#logger = deps.logger;
    this.#tokens = deps.tokens;
    this.#engine = deps.expressions;
    this.#sandbox = deps.sandbox;
    this.#fetch = deps.fetch;
    this.#limits = deps.limits;
    this.#consoleOutput = deps.consoleOutput ?? 'summary';
  }

  /** Creates a reactor (reactor:create) from a formula of the tenant, with a configuration that matches its declarations. */
  async create(caller: Caller, body: unknown): Promise<ReactorView> {
    return this.#audit.guard(caller, 'reactor:create', null, async () => {
      requirePermission(caller, 'reactor:create');
      refuseNul(body, '');
      const input = parseCreateReactor(body);
      const formula = await this.#store.getFormula(caller.tenantId, input.formulaId);
      if (!formula) throw ValidationError.field('formula.id', 'does not name a formula of this tenant');
      const configuration = checkConfiguration(input.configuration, formula.configuration);
      const application = await this.#application(caller.tenantId, input.applicationId);
      if (application) requireMayBind(caller, application);
      const reactor: ReactorRecord = {
        id: randomUUID(),
        tenantId: caller.tenantId,
        name: input.name,
        formulaId: formula.id,
        configuration,
        applicationId: application?.id ?? null,
        createdBy: caller.applicationId,
        createdAt: this.#clock.now(),
        modifiedBy: null,
        modifiedAt: null,
      };
      await this.#store.createReactor(reactor);
      this.#record(caller, 'reactor:create', reactor.id);
      return reactorView(reactor, formula, application, true);
    });
  }

  /** Gets a reactor of the caller's tenant (reactor:read); another tenant's is not found. */
  async get(caller: Caller, id: string): Promise<ReactorView> {
    return this.#audit.guard(caller, 'reactor:read', id, async () => {
      requirePermission(caller, 'reactor:read');
      refuseNul(id, 'id');
      const reactor = await this.#find(caller, id);
      const view = await this.#view(caller, reactor, new Map(), new Map());
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
      const filter = parseFilter(q);
      const page = parsePage(q);
      const result = await this.#store.listReactors(caller.tenantId, filter, page);
      // Reactors often share formulas and applications: load each once per page.
      const formulas = new Map<string, FormulaRecord | null>();
      const applications = new Map<string, { record: ApplicationRecord | null; visible: boolean }>();
      const views = new Map<ReactorRecord, ReactorView>();
      for (const reactor of result.items) views.set(reactor, await this.#view(caller, reactor, formulas, applications));
      this.#record(caller, 'reactor:list', null);
      return toPaginated(page, result, (reactor) => views.get(reactor) ?? null);
    });
  }

  /**
   * Replaces a reactor's name, configuration and application (reactor:update, PUT). The formula
   * cannot change. A reactor bound to an application (before or after) may only be changed by a
   * caller that holds every grant of that application, or a management application: its
   * configuration steers where the data its code sees goes.
   */
  async update(caller: Caller, id: string, body: unknown): Promise<ReactorView> {
    return this.#audit.guard(caller, 'reactor:update', id, async () => {
      requirePermission(caller, 'reactor:update');
      refuseNul(id, 'id');
      refuseNul(body, '');
      const current = await this.#find(caller, id);
      // A reactor this caller may not change is refused before its input is looked at.
      const bound = current.applicationId === null ? null : await this.#store.getApplication(current.tenantId, current.applicationId);
      if (bound) requireMayChangeBound(caller, current.id, bound);
      const input = parseUpdateReactor(body);
      const formula = await this.#formula(current);
      const configuration = checkConfiguration(input.configuration, formula.configuration);
      const application = await this.#application(caller.tenantId, input.applicationId);
      if (application && application.id !== bound?.id) requireMayBind(caller, application);
      const next: ReactorRecord = {
        ...current,
        name: input.name,
        configuration,
        applicationId: application?.id ?? null,
        modifiedBy: caller.applicationId,
        modifiedAt: this.#clock.now(),
      };
      // Only while the reactor is still bound as it was when the grants above were checked.
      const result = await this.#store.updateReactor(
        caller.tenantId,
        current.id,
        { name: next.name, configuration: next.configuration, applicationId: next.applicationId, modifiedBy: caller.applicationId, modifiedAt: next.modifiedAt! },
        { applicationId: current.applicationId },
      );
      if (result.status === 'not_found') throw new NotFoundError('Reactor', String(id));
      if (result.status === 'changed') throw concurrentChange('Reactor', current.id);
      this.#record(caller, 'reactor:update', next.id);
      return reactorView(result.record, formula, application, true);
    });
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
   * Invokes a reactor synchronously (token:use; spec 4.2 "Invoke a Reactor"). Body:
   * `{ args?, timeout_ms? }`. Every token named in args needs token:use on all its containers; a
   * denied or unknown token fails the whole call before any code runs.
   */
  async react(caller: Caller, id: string, body: unknown): Promise<ReactorResponse> {
    return this.#invoke(caller, id, body, 0);
  }

  async #invoke(caller: Caller, id: string, body: unknown, depth: number): Promise<ReactorResponse> {
    return this.#audit.guard(caller, 'reactor:invoke', id, async () => {
      requirePermission(caller, 'token:use');
      refuseNul(id, 'id');
      if (depth > MAX_REACTOR_NESTING) {
        throw ValidationError.field('reactor', `bt.reactors.react nests more than ${MAX_REACTOR_NESTING} reactor runs deep`);
      }
      const input = parseInvoke(body);
      const reactor = await this.#find(caller, id);
      const formula = await this.#formula(reactor);
      let configuration: Record<string, unknown>;
      try {
        configuration = checkConfiguration(reactor.configuration, formula.configuration);
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        throw new ConflictError("The reactor's configuration no longer matches its formula's declarations; update the reactor");
      }
      // Every value this run is handed from a token: what a redacted console log must not show.
      const sensitive = new SensitiveValues();
      const args = validateArgs(await this.#detokenize(caller, input.args, sensitive), formula.requestParameters);
      const appCaller = await this.#applicationCaller(reactor);

      const sandbox = await this.#sandbox();
      const bt =
        appCaller &&
        createBtTree(this.#tokens, (c, nestedId, nestedBody) => this.#invoke(c, nestedId, nestedBody, depth + 1), appCaller, (method, result) =>
          sensitive.addBtResult(method, result),
        );
      const run = await sandbox.run({
        code: formula.code,
        req: { args, configuration },
        host: { bt, fetch: this.#fetch },
        ...(this.#limits ? { limits: this.#limits } : {}),
        // Also for a failed run. Reactor code sees detokenized data: by default only the output's
        // size reaches the logger; `consoleOutput: 'redacted'` adds the lines, token values redacted.
        onLogs: (lines, truncated) =>
          logConsoleOutput(this.#logger, this.#consoleOutput, { tenantId: caller.tenantId, reactorId: reactor.id }, lines, truncated, sensitive),
      });

      const output = readReactorOutput(run.result);
      const response: ReactorResponse = {};
      if (output.raw !== undefined) response.raw = output.raw;
      if (output.tokenize !== undefined) {
        if (!appCaller) {
          throw ValidationError.field('tokenize', 'the reactor returned a tokenize block but has no application to create the tokens as; give the reactor an application');
        }
        response.tokens = await this.#tokenize(appCaller, output.tokenize);
      }
      this.#record(caller, 'reactor:invoke', reactor.id);
      return response;
    });
  }

  /** Replaces token expressions in args by the token data, as the caller's token:use transform shows it. */
  async #detokenize(caller: Caller, args: unknown, sensitive: SensitiveValues): Promise<unknown> {
    const plan = planDetokenize(args);
    if (plan.ids.size === 0) return applyDetokenize(plan, new Map(), this.#engine);
    let data: Map<string, unknown>;
    try {
      data = await this.#tokens.use(caller, [...plan.ids.keys()]);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      // Report the missing id on the arg that holds it.
      const field = error.id === undefined ? undefined : plan.ids.get(error.id);
      if (field !== undefined) throw ValidationError.field(field, `names the token '${error.id}', which does not exist`);
      throw ValidationError.field('args', 'names a token that does not exist');
    }
    for (const value of data.values()) sensitive.addTokenData(value);
    return applyDetokenize(plan, data, this.#engine);
  }

  async #tokenize(appCaller: Caller, block: unknown): Promise<unknown> {
    try {
      return await this.#tokens.tokenize(appCaller, block);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      // The code built these bodies: say where they came from.
      const errors = Object.fromEntries(Object.entries(error.errors).map(([field, messages]) => [field === 'body' ? 'tokenize' : `tokenize.${field}`, messages]));
      throw new ValidationError(errors);
    }
  }

  /** The Caller `req.bt` acts as: the reactor's application, loaded now so its current rules hold. */
  async #applicationCaller(reactor: ReactorRecord): Promise<Caller | null> {
    if (reactor.applicationId === null) return null;
    const app = await this.#store.getApplication(reactor.tenantId, reactor.applicationId);
    if (!app) throw new ConflictError("The reactor's application no longer exists; update the reactor");
    return makeCaller(app);
  }

  /** An application a reactor may act as: of this tenant, of type public or private (spec 2.3, 5.4). */
  async #application(tenantId: string, id: string | null): Promise<ApplicationRecord | null> {
    if (id === null) return null;
    const app = await this.#store.getApplication(tenantId, id);
    if (!app) throw ValidationError.field('application.id', 'does not name an application of this tenant');
    if (app.type !== 'public' && app.type !== 'private') {
      throw ValidationError.field('application.id', `must be an application of type public or private, not ${app.type}`);
    }
    return app;
  }

  async #find(caller: Caller, id: string): Promise<ReactorRecord> {
    const reactor = typeof id === 'string' ? await this.#store.getReactor(caller.tenantId, id) : null;
    if (!reactor) throw new NotFoundError('Reactor', String(id));
    return reactor;
  }

  async #formula(reactor: ReactorRecord): Promise<FormulaRecord> {
    const formula = await this.#store.getFormula(reactor.tenantId, reactor.formulaId);
    // The store refuses to delete a formula in use, so this is a broken store, not a user error.
    if (!formula) throw new Error(`Reactor ${reactor.id} references a missing formula`);
    return formula;
  }

  /** The view of a reactor for `caller`: its application shown only to a caller that could bind it. */
  async #view(
    caller: Caller,
    reactor: ReactorRecord,
    formulas: Map<string, FormulaRecord | null>,
    applications: Map<string, { record: ApplicationRecord | null; visible: boolean }>,
  ): Promise<ReactorView> {
    let formula = formulas.get(reactor.formulaId);
    if (formula === undefined) formulas.set(reactor.formulaId, (formula = await this.#formula(reactor)));
    let application: { record: ApplicationRecord | null; visible: boolean } = { record: null, visible: true };
    if (reactor.applicationId !== null) {
      const cached = applications.get(reactor.applicationId);
      if (cached !== undefined) application = cached;
      else {
        const record = await this.#store.getApplication(reactor.tenantId, reactor.applicationId);
        application = { record, visible: record === null || mayActAs(caller, record) };
        applications.set(reactor.applicationId, application);
      }
    }
    return reactorView(reactor, formula!, application.record, application.visible);
  }

  #record(caller: Caller, operation: string, resourceId: string | null): void {
    this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation, resourceId, outcome: 'success' });
  }
}

function parseFilter(query: ListReactorsQuery): ReactorFilter {
  const filter: ReactorFilter = {};
  if (query.id !== undefined) {
    const ids = Array.isArray(query.id) ? query.id : [query.id];
    ids.forEach((item, i) => {
      if (typeof item !== 'string' || item.length === 0) throw ValidationError.field(`id[${i}]`, 'must be a non-empty string');
    });
    filter.ids = ids;
  }
  if (query.name !== undefined && query.name !== null) {
    if (typeof query.name !== 'string' || query.name.length > 200) throw ValidationError.field('name', 'must be a string of at most 200 characters');
    if (query.name !== '') filter.name = query.name;
  }
  return filter;
}
