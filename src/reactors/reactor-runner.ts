import type { AuditLog } from '../audit/audit.js';
import { type Caller, requirePermission } from '../auth/caller.js';
import { ConflictError, ValidationError } from '../errors/errors.js';
import type { ExpressionEngine } from '../expressions/engine.js';
import type { Logger } from '../common/logger.js';
import type { HostFetch, Sandbox, SandboxLimits } from '../sandbox/sandbox.js';
import { type RunDependencies, currentRunDependencies } from '../idempotency/run-dependencies.js';
import type { ApplicationRecord, FormulaRecord, ReactorRecord, Store } from '../storage/store.js';
import { type DetokenizeSource, detokenizeValue } from '../tokens/detokenize-service.js';
import type { TokenService } from '../tokens/token-service.js';
import { refuseNul } from '../validation/no-nul.js';
import { validateArgs } from './args.js';
import { reactorCaller } from '../auth/binding-authz.js';
import { btTokenIds, createBtTree, tokenViewIds } from './bt-bridge.js';
import { type ConsoleOutputMode, SensitiveValues, logConsoleOutput } from './console-output.js';
import { type InvokeInput, checkConfiguration, parseInvoke } from './reactor-input.js';
import { findReactorAndFormula } from './reactor-lookup.js';
import { readReactorOutput } from './reactor-result.js';
import { runOwner } from './run-owner.js';

/** How deep `bt.reactors.react` may nest reactor runs (the top-level invocation is depth 0). */
export const MAX_REACTOR_NESTING = 3;

/** The Reactor Response object (docs/reactors.md). */
export interface ReactorResponse {
  raw?: unknown;
  tokens?: unknown;
}

export interface ReactorRunnerDeps {
  store: Store;
  audit: AuditLog;
  logger: Logger;
  tokens: TokenService;
  /** What `{{ <id> }}` expressions in args resolve against (tokens, then token intents); default: `tokens`. */
  detokenizeSource?: DetokenizeSource;
  expressions: ExpressionEngine;
  /** The sandbox, created on first need. */
  sandbox: () => Promise<Sandbox>;
  /** The egress-checked fetch given to reactor code; null: fetch rejects. */
  fetch: HostFetch | null;
  /** Per-run limit overrides passed to the sandbox. */
  limits?: Partial<SandboxLimits>;
  /** What becomes of reactor console output. */
  consoleOutput: ConsoleOutputMode;
}

/** An invocation that passed every check, ready to run. */
interface PreparedRun {
  reactor: ReactorRecord;
  /** Null for a reactor with inline code. */
  formula: FormulaRecord | null;
  configuration: Record<string, unknown>;
  args: unknown;
  /** The tokens the args named, detokenized as the invoking caller. */
  argTokenIds: string[];
  sensitive: SensitiveValues;
  /** The reactor's application as loaded for this run, and the Caller req.bt acts as. */
  application: ApplicationRecord | null;
  appCaller: Caller | null;
}

/**
 * Runs reactors: detokenizes the args, validates them against the formula's request parameters,
 * runs the code in the sandbox (its `req.bt` acting as the reactor's application, nested runs
 * bounded by MAX_REACTOR_NESTING) and tokenizes its `tokenize` block.
 */
export class ReactorRunner {
  #deps: ReactorRunnerDeps;

  constructor(deps: ReactorRunnerDeps) {
    this.#deps = deps;
  }

  /**
   * Checks and runs an invocation, audited as `reactor:invoke`. `timeoutMs`: an asynchronous run's
   * wall-time limit. `dependencies`: where a nested run reports what it read; a top-level run
   * (depth 0) reports to the idempotent request it runs in, if any (src/idempotency/run-dependencies.ts).
   */
  async invoke(
    caller: Caller,
    id: string,
    input: InvokeInput,
    depth: number,
    timeoutMs?: number,
    dependencies: RunDependencies | undefined = depth === 0 ? currentRunDependencies() : undefined,
  ): Promise<ReactorResponse> {
    const audit = this.#deps.audit;
    return audit.guard(caller, 'reactor:invoke', id, async () => {
      const prepared = await this.prepare(caller, id, input, depth);
      const response = await this.#execute(caller, prepared, depth, timeoutMs, dependencies);
      audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'reactor:invoke', resourceId: prepared.reactor.id, outcome: 'success' });
      return response;
    });
  }

  /** Every check of an invocation (permission, nesting, reactor, configuration, args and their tokens), without running it. */
  async prepare(caller: Caller, id: string, input: InvokeInput, depth: number): Promise<PreparedRun> {
    const { store } = this.#deps;
    requirePermission(caller, 'token:use');
    refuseNul(id, 'id');
    if (depth > MAX_REACTOR_NESTING) {
      throw ValidationError.field('reactor', `bt.reactors.react nests more than ${MAX_REACTOR_NESTING} reactor runs deep`);
    }
    const { reactor, formula } = await findReactorAndFormula(store, caller, id);
    let configuration: Record<string, unknown> = reactor.configuration;
    try {
      if (formula) configuration = checkConfiguration(reactor.configuration, formula.configuration);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      throw new ConflictError("The reactor's configuration no longer matches its formula's declarations; update the reactor");
    }
    // Every value this run is handed from a token: what a redacted console log must not show.
    const sensitive = new SensitiveValues();
    // Inline code declares no request parameters: any args pass (docs/reactors.md).
    const detokenized = await this.#detokenize(caller, input.args, sensitive);
    const args = validateArgs(detokenized.value, formula?.requestParameters ?? []);
    const application = await this.#application(reactor);
    const appCaller = application && reactorCaller(reactor, application);
    return { reactor, formula, configuration, args, argTokenIds: detokenized.ids, sensitive, application, appCaller };
  }

  async #execute(caller: Caller, prepared: PreparedRun, depth: number, timeoutMs?: number, dependencies?: RunDependencies): Promise<ReactorResponse> {
    const { reactor, formula, configuration, args, sensitive, application, appCaller } = prepared;
    const { logger, consoleOutput } = this.#deps;
    // What the output may carry without naming it: a replay of it must not outlive these.
    dependencies?.read(caller, prepared.argTokenIds);
    if (application) dependencies?.actedAs(application);
    const sandbox = await this.#deps.sandbox();
    const bt =
      appCaller &&
      createBtTree(
        this.#deps.tokens,
        (c, nestedId, nestedBody) => {
          const nested = parseInvoke(nestedBody);
          if (nested.callbackUrl !== null) throw ValidationError.field('callback_url', 'a reactor cannot start an asynchronous run; call bt.reactors.react without callback_url');
          return this.invoke(c, nestedId, nested, depth + 1, undefined, dependencies);
        },
        appCaller,
        (method, result) => {
          sensitive.addBtResult(method, result);
          dependencies?.read(appCaller, btTokenIds(method, result));
        },
      );
    const limits = timeoutMs === undefined ? this.#deps.limits : { ...this.#deps.limits, timeoutMs };
    const run = await sandbox.run({
      code: formula?.code ?? reactor.code!,
      req: { args, configuration },
      host: { bt, fetch: this.#deps.fetch },
      ...(limits ? { limits } : {}),
      // Whose share of the workers the run uses (a nested run: its top-level caller's, run-task.ts).
      owner: runOwner(caller),
      // Also for a failed run. Reactor code sees detokenized data: by default only the output's
      // size reaches the logger; `consoleOutput: 'redacted'` adds the lines, token values redacted.
      onLogs: (lines, truncated) => logConsoleOutput(logger, consoleOutput, { tenantId: caller.tenantId, reactorId: reactor.id }, lines, truncated, sensitive),
    });

    const output = readReactorOutput(run.result);
    const response: ReactorResponse = {};
    if (output.raw !== undefined) response.raw = output.raw;
    if (output.tokenize !== undefined) {
      if (!appCaller) {
        throw ValidationError.field('tokenize', 'the reactor returned a tokenize block but has no application to create the tokens as; give the reactor an application');
      }
      response.tokens = await this.#tokenize(appCaller, caller, output.tokenize);
      dependencies?.read(appCaller, tokenViewIds(response.tokens));
    }
    return response;
  }

  /** Replaces token expressions in args by the token data, as the caller's token:use transform shows it; and the ids of those tokens. */
  async #detokenize(caller: Caller, args: unknown, sensitive: SensitiveValues): Promise<{ value: unknown; ids: string[] }> {
    const { value, data } = await detokenizeValue(this.#deps.detokenizeSource ?? this.#deps.tokens, this.#deps.expressions, caller, args, 'args');
    for (const item of data.values()) sensitive.addTokenData(item);
    return { value, ids: [...data.keys()] };
  }

  /**
   * Creates the tokens of a tokenize block as the reactor's application. The answer goes to the
   * invoker, who chose the args: a deduplicated token must be one the invoker may reveal too, or
   * the block would hand it tokens (and data) of the application's it cannot read (docs/authority.md).
   */
  async #tokenize(appCaller: Caller, invoker: Caller, block: unknown): Promise<unknown> {
    try {
      return await this.#deps.tokens.tokenize(appCaller, block, { shownTo: invoker });
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      // The code built these bodies: say where they came from.
      const errors = Object.fromEntries(Object.entries(error.errors).map(([field, messages]) => [field === 'body' ? 'tokenize' : `tokenize.${field}`, messages]));
      throw new ValidationError(errors);
    }
  }

  /** The application `req.bt` acts as: the reactor's, loaded now so its current rules hold. */
  async #application(reactor: ReactorRecord): Promise<ApplicationRecord | null> {
    if (reactor.applicationId === null) return null;
    const app = await this.#deps.store.getApplication(reactor.tenantId, reactor.applicationId);
    if (!app) throw new ConflictError("The reactor's application no longer exists; update the reactor");
    return app;
  }
}
