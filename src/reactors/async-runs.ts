import { randomUUID } from 'node:crypto';
import { type Caller, type SessionIdentity, makeCaller } from '../auth/caller.js';
import { resumedSessionCaller } from '../auth/session-grants.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { ConflictError, NotFoundError } from '../errors/errors.js';
import type { JobContext, JobQueue } from '../jobs/job-queue.js';
import { type HeldState, HeldResults } from '../idempotency/held-result.js';
import { idsIn } from '../idempotency/idempotency-service.js';
import { RunDependencies, trackRunDependencies } from '../idempotency/run-dependencies.js';
import { problemOfError } from '../errors/problem.js';
import { formatIso } from '../common/time.js';
import type { ReactorRequestRecord, SessionGrants, Store } from '../storage/store.js';
import { checkWebhookUrl } from '../webhooks/webhook-url.js';
import type { InvokeInput } from './reactor-input.js';

/** How long a finished asynchronous run's result is kept (docs/reactors.md). */
export const RESULT_RETENTION_MS = 24 * 60 * 60 * 1000;
/** Lease beyond a run's timeout: time to store the result and notify before another worker may take the job. */
const LEASE_MARGIN_MS = 60_000;
/**
 * The least lease beyond a run's timeout a run starts with. The claim's lease (60 s) already covers
 * a run of the default 10 s timeout with 50 s to spare, so only longer runs renew it first: a
 * renewal is a write (one commit) of its own per run (docs/performance.md).
 */
const LEASE_MARGIN_MIN_MS = 30_000;
const JOB_KIND = 'reactor.run';

/** The answer to an accepted asynchronous invocation (HTTP 202). */
export interface ReactorRunAccepted {
  /** Basis Theory's name for `id` (its SDK's AsyncReactResponse reads it). */
  asyncReactorRequestId: string;
  id: string;
  status: 'pending';
  reactor_id: string;
  created_at: string;
}

/** An asynchronous run as its requester sees it (GET /reactors/{id}/results/{request_id}). */
export interface ReactorRunView {
  id: string;
  reactor_id: string;
  status: ReactorRequestRecord['status'];
  created_at: string;
  completed_at?: string;
  result?: { raw?: unknown; tokens?: unknown };
  /** A completed run's reactor response beside `result`, as Basis Theory's result endpoint answers it. */
  raw?: unknown;
  tokens?: unknown;
  error?: Record<string, unknown>;
}

/** What the vault is told when an asynchronous run ends (callback and event webhooks are built from it). */
export interface ReactorRunFinished {
  tenantId: string;
  requestId: string;
  reactorId: string;
  applicationId: string;
  status: 'completed' | 'failed';
  callbackUrl: string | null;
  result?: { raw?: unknown; tokens?: unknown };
  error?: Record<string, unknown>;
  completedAt: number;
}

/** What `reactors.onAsyncRun` is told when an asynchronous run ends: no ids of data, no result. */
export interface AsyncRunEnded {
  tenantId: string;
  reactorId: string;
  /** 200 when the run completed, else the status of its problem (what a synchronous call would answer). */
  status: number;
}

/** Encrypts records with the tenant's data key (the vault's KeyRing.sealRecord/openRecord). */
export interface RecordSealer {
  sealRecord(tenantId: string, context: readonly string[], plaintext: Buffer): Promise<Buffer>;
  openRecord(tenantId: string, context: readonly string[], ciphertext: Uint8Array): Promise<Buffer>;
}

/** What the reactor service lends the asynchronous path: the same checks and the same run as a synchronous call. */
export interface ReactorRunner {
  /** Every check of a synchronous invocation, without running the code. */
  check(caller: Caller, reactorId: string, input: InvokeInput): Promise<void>;
  /** A synchronous invocation (audited), bounded by `timeoutMs`. */
  run(caller: Caller, reactorId: string, input: InvokeInput): Promise<{ raw?: unknown; tokens?: unknown }>;
}

export interface AsyncRunsDeps {
  store: Store;
  clock: Clock;
  jobs: JobQueue;
  records: RecordSealer;
  /** Whether callback URLs may name loopback and private addresses (the egress option). */
  allowPrivateNetwork: boolean;
  onRunFinished?: (event: ReactorRunFinished) => Promise<void>;
  /** The `reactors.onAsyncRun` option: told once per run that ends (metrics); what it throws is logged. */
  onAsyncRun?: (event: AsyncRunEnded) => void;
  logger?: Logger;
}

/**
 * Asynchronous reactor invocation (docs/reactors.md): accepted after every check a synchronous call
 * makes, stored with its args sealed, run by a `reactor.run` job as the requesting application
 * (with its grants at run time), its result sealed and readable by that application for 24 hours.
 */
export class AsyncRuns {
  readonly #deps: AsyncRunsDeps;
  readonly #runner: ReactorRunner;
  readonly #held: HeldResults;

  constructor(deps: AsyncRunsDeps, runner: ReactorRunner) {
    this.#deps = deps;
    this.#runner = runner;
    this.#held = new HeldResults(deps.store);
    deps.jobs.register(JOB_KIND, (payload, ctx) => this.#run(payload as { tenantId: string; requestId: string }, ctx), {
      leaseMs: LEASE_MARGIN_MS,
      maxAttempts: 5,
    });
  }

  /** Checks the invocation as a synchronous one, then stores it and its job; nothing is stored when a check fails. */
  async accept(caller: Caller, reactorId: string, input: InvokeInput, callbackUrl: string | null): Promise<ReactorRunAccepted> {
    // The address is checked again, resolved, at each delivery.
    if (callbackUrl !== null) checkWebhookUrl(callbackUrl, 'callback_url', this.#deps.allowPrivateNetwork);
    await this.#runner.check(caller, reactorId, input);
    const { store, clock, records } = this.#deps;
    const id = randomUUID();
    const now = clock.now();
    const args = await records.sealRecord(caller.tenantId, context(id, 'args'), Buffer.from(JSON.stringify(runInput(caller, input.args ?? {})), 'utf8'));
    const request: ReactorRequestRecord = {
      tenantId: caller.tenantId,
      id,
      reactorId,
      applicationId: caller.applicationId,
      status: 'pending',
      callbackUrl,
      timeoutMs: input.timeoutMs,
      args,
      result: null,
      error: null,
      createdAt: now,
      startedAt: null,
      completedAt: null,
      expiresAt: null,
    };
    const job = this.#deps.jobs.newJob({ kind: JOB_KIND, tenantId: caller.tenantId, payload: { tenantId: caller.tenantId, requestId: id }, runAt: now });
    await store.createReactorRequest(request, job);
    this.#deps.jobs.notifyEnqueued();
    return { asyncReactorRequestId: id, id, status: 'pending', reactor_id: reactorId, created_at: formatIso(now) };
  }

  /** The run as its requester sees it; another application's (or tenant's) request is not found. */
  async result(caller: Caller, reactorId: string, requestId: string): Promise<ReactorRunView> {
    const request = typeof requestId === 'string' ? await this.#deps.store.getReactorRequest(caller.tenantId, requestId) : null;
    if (!request || request.reactorId !== reactorId || request.applicationId !== caller.applicationId) {
      throw new NotFoundError('Reactor result', String(requestId));
    }
    const view: ReactorRunView = { id: request.id, reactor_id: request.reactorId, status: request.status, created_at: formatIso(request.createdAt) };
    if (request.completedAt !== null) view.completed_at = formatIso(request.completedAt);
    const stored = await this.#result(request);
    if (stored?.held !== undefined) {
      const stale = await this.#held.stale(caller, stored.held, this.#deps.clock.now());
      if (stale !== null) throw new ConflictError(`${STALE[stale]}, so its result is withheld; invoke the reactor again`);
    }
    if (stored !== undefined) {
      view.result = stored.result;
      if (stored.result.raw !== undefined) view.raw = stored.result.raw;
      if (stored.result.tokens !== undefined) view.tokens = stored.result.tokens;
    }
    if (request.error !== null) view.error = JSON.parse(request.error) as Record<string, unknown>;
    return view;
  }

  /** The stored result and, for results stored since they were held (held-result.ts), what it depends on. */
  async #result(request: ReactorRequestRecord): Promise<{ result: RunResult; held?: HeldState } | undefined> {
    if (request.result === null) return undefined;
    const plaintext = await this.#deps.records.openRecord(request.tenantId, context(request.id, 'result'), request.result);
    const stored = JSON.parse(plaintext.toString('utf8')) as RunResult | HeldRun;
    if (!isHeld(stored)) return { result: stored };
    const { [HELD]: _format, result, ...held } = stored;
    return { result, held };
  }

  /** The `reactor.run` job. A request that already finished is only announced again (at-least-once). */
  async #run({ tenantId, requestId }: { tenantId: string; requestId: string }, ctx: JobContext): Promise<void> {
    const { store, clock, records } = this.#deps;
    let request = await store.getReactorRequest(tenantId, requestId);
    if (!request) return; // removed (its retention ended): nothing to run or announce
    if (request.status === 'pending' || request.status === 'running') {
      const startedAt = clock.now();
      if ((ctx.job.leaseExpiresAt ?? startedAt) - startedAt < request.timeoutMs + LEASE_MARGIN_MIN_MS) await ctx.renew(request.timeoutMs + LEASE_MARGIN_MS);
      // Another worker finished it since it was read (its lease had run out): announce that, do not run it again.
      if (!(await store.startReactorRequest(tenantId, requestId, startedAt))) {
        const finished = await store.getReactorRequest(tenantId, requestId);
        if (finished) await this.#announce(finished);
        return;
      }
      let result: Buffer | null = null;
      let error: string | null = null;
      let problemStatus = 200;
      try {
        const response = await abortable(this.#execute(request), ctx.signal);
        result = await records.sealRecord(tenantId, context(requestId, 'result'), Buffer.from(JSON.stringify(response), 'utf8'));
      } catch (thrown) {
        if (ctx.signal.aborted) throw thrown; // released at shutdown: the run starts again on the next claim
        const problem = problemOfError(thrown);
        problemStatus = problem.status;
        error = JSON.stringify(problem);
      }
      const completedAt = clock.now();
      const status = error === null ? 'completed' : 'failed';
      const outcome = { status, result, error, completedAt, expiresAt: completedAt + RESULT_RETENTION_MS } as const;
      const finished = await store.finishReactorRequest(tenantId, requestId, outcome);
      this.#ended({ tenantId, reactorId: request.reactorId, status: problemStatus });
      // Finished here: the record is what was written. Else another worker finished it first (its
      // lease ran out meanwhile): announce what that one stored.
      request = finished ? { ...request, ...outcome, startedAt: request.startedAt ?? startedAt } : await store.getReactorRequest(tenantId, requestId);
      if (!request) return;
    }
    await this.#announce(request);
  }

  #ended(event: AsyncRunEnded): void {
    try {
      this.#deps.onAsyncRun?.(event);
    } catch (error) {
      this.#deps.logger?.error('reactors.onAsyncRun threw; the run itself is finished', { error });
    }
  }

  /** Runs the request; its result with what it depends on (held-result.ts), to be sealed. */
  async #execute(request: ReactorRequestRecord): Promise<HeldRun> {
    const sealed = JSON.parse((await this.#deps.records.openRecord(request.tenantId, context(request.id, 'args'), request.args)).toString('utf8')) as unknown;
    const { args, session } = readRunInput(sealed);
    const caller = await this.#caller(request, session);
    // Its own record: not the request that accepted the run, whose async context the job queue's timer may carry.
    const dependencies = new RunDependencies();
    let result: RunResult;
    try {
      result = await trackRunDependencies(dependencies, () => this.#runner.run(caller, request.reactorId, { args, timeoutMs: request.timeoutMs }));
    } finally {
      dependencies.close();
    }
    const { state } = await this.#held.hold(caller, idsIn(result), dependencies, this.#deps.clock.now());
    return { [HELD]: 1, ...state, result };
  }

  /**
   * Who the run acts as, as it is now: the requesting application with its current grants, or a
   * requesting session's grants bounded by its authorizer's current grants. A grant removed since
   * the request no longer holds, and a requester (or authorizer) deleted meanwhile fails the run.
   * A session that expired after its request was accepted does not stop the run: it was accepted
   * within the session's life, and still acts with no more than the authorizer holds.
   */
  async #caller(request: ReactorRequestRecord, session: SessionRun | undefined): Promise<Caller> {
    const { store } = this.#deps;
    if (session !== undefined) {
      const authorizer = await store.getApplication(request.tenantId, session.identity.authorizedBy);
      if (!authorizer) throw new ConflictError('The application that authorized the session that requested this run no longer exists');
      return resumedSessionCaller(request.tenantId, session.identity, session.grants, authorizer);
    }
    const app = await store.getApplication(request.tenantId, request.applicationId);
    if (!app) throw new ConflictError('The application that requested this run no longer exists');
    return makeCaller(app);
  }

  async #announce(request: ReactorRequestRecord): Promise<void> {
    const notify = this.#deps.onRunFinished;
    if (!notify || (request.status !== 'completed' && request.status !== 'failed')) return;
    const event: ReactorRunFinished = {
      tenantId: request.tenantId,
      requestId: request.id,
      reactorId: request.reactorId,
      applicationId: request.applicationId,
      status: request.status,
      callbackUrl: request.callbackUrl,
      completedAt: request.completedAt ?? this.#deps.clock.now(),
    };
    const stored = await this.#result(request);
    if (stored !== undefined) event.result = stored.result;
    if (request.error !== null) event.error = JSON.parse(request.error) as Record<string, unknown>;
    await notify(event);
  }
}

type RunResult = { raw?: unknown; tokens?: unknown };

/** Marks a sealed result held with what it depends on (`{ tokenvault_held: 1, ...HeldState, result }`); earlier results are the bare response. */
const HELD = 'tokenvault_held';
type HeldRun = HeldState & { [HELD]: 1; result: RunResult };

function isHeld(value: RunResult | HeldRun): value is HeldRun {
  return (value as Record<string, unknown>)[HELD] === 1;
}

/** Why a stored result is withheld from its requester, by what changed since the run (HeldResults.stale). */
const STALE = {
  grants: "The requester's permissions or access rules lost a grant since this run",
  application: 'The application the reactor ran as (its req.bt) was deleted or its permissions or access rules changed since this run',
  carried: 'A token the result of this run carries was changed, deleted or expired since',
  read: 'A token this run read, created or changed through req.bt was changed, deleted or expired since',
} as const;

/** A session's part of a run it requested: who it is and its effective grants when it asked. */
interface SessionRun {
  identity: SessionIdentity;
  grants: SessionGrants;
}

/** Marks the sealed run input (args and, for a session, its grants); older requests sealed the args alone. */
const RUN_INPUT_FORMAT = 'run-input/2';

function runInput(caller: Caller, args: unknown): { format: string; args: unknown; session?: SessionRun } {
  if (caller.session === undefined) return { format: RUN_INPUT_FORMAT, args };
  return { format: RUN_INPUT_FORMAT, args, session: { identity: { ...caller.session }, grants: { permissions: [...caller.permissions], rules: [...caller.rules] } } };
}

function readRunInput(sealed: unknown): { args: unknown; session?: SessionRun } {
  const input = sealed as { format?: unknown; args?: unknown; session?: SessionRun } | null;
  if (input === null || typeof input !== 'object' || input.format !== RUN_INPUT_FORMAT) return { args: sealed };
  return input.session === undefined ? { args: input.args } : { args: input.args, session: input.session };
}

/** The sealing context of a request's args or result: a ciphertext cannot be moved to another request or field. */
function context(requestId: string, field: 'args' | 'result'): string[] {
  return ['reactor-request', requestId, field];
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
