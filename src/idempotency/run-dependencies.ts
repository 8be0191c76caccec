import { AsyncLocalStorage } from 'node:async_hooks';
import type { Caller } from '../auth/caller.js';
import type { ApplicationRecord } from '../storage/store.js';

/**
 * What a result stored for an idempotency key depends on beyond what the result names: the tokens
 * a reactor run read, created or changed through `req.bt` or its tokenize block (as the reactor's
 * application, not as the caller), and that application's grants. The result of such a run may
 * carry a token's data without naming the token, so the idempotency service follows these too: a
 * replay after one of them changed, or after the application's grants changed, is a 409.
 *
 * IdempotencyService.run opens one per run (`trackRunDependencies`) and the reactor runner reports
 * to it (`currentRunDependencies`, read where the top-level run starts, in the request's own async
 * context, and passed on explicitly to nested runs: host calls from a sandbox arrive through a
 * worker's message port, whose async context is not the request's).
 */
export class RunDependencies {
  /** Token ids by the Caller that read them (whose grants decide which of them are followed). */
  readonly #reads = new Map<Caller, Set<string>>();
  /** Applications reactor code acted as, by id, as they were when the run loaded them. */
  readonly #applications = new Map<string, ApplicationRecord>();
  #open = true;

  /** Tokens `reader` read, created or changed for the run. */
  read(reader: Caller, ids: Iterable<string>): void {
    if (!this.#open) return;
    let set = this.#reads.get(reader);
    if (set === undefined) this.#reads.set(reader, (set = new Set()));
    for (const id of ids) set.add(id);
  }

  /** An application the run's code acted as (a reactor's, through req.bt). The first record seen of each counts. */
  actedAs(application: ApplicationRecord): void {
    if (this.#open && !this.#applications.has(application.id)) this.#applications.set(application.id, application);
  }

  /**
   * Ends the recording: the run returned. Work the run left behind (an asynchronous reactor run it
   * queued, say) may still find this object through its async context; what it reports is not
   * part of the stored result.
   */
  close(): void {
    this.#open = false;
  }

  get reads(): ReadonlyMap<Caller, ReadonlySet<string>> {
    return this.#reads;
  }

  get applications(): ReadonlyMap<string, ApplicationRecord> {
    return this.#applications;
  }
}

const scope = new AsyncLocalStorage<RunDependencies>();
/** Runs tracked now: while any is, `scope` is on. */
let tracking = 0;

/**
 * Runs `fn` with `dependencies` as the current run's. When the last tracked run has returned, the
 * storage is switched off again: while any AsyncLocalStorage is on, Node runs an async hook for
 * every promise of every request the process serves (docs/performance.md, "Against the floor").
 * Work a run left behind then finds no run, as it would find a closed one.
 */
export async function trackRunDependencies<T>(dependencies: RunDependencies, fn: () => Promise<T>): Promise<T> {
  tracking++;
  try {
    return await scope.run(dependencies, fn);
  } finally {
    if (--tracking === 0) scope.disable();
  }
}

/** The dependencies of the idempotent run the current async context belongs to, if any. */
export function currentRunDependencies(): RunDependencies | undefined {
  return scope.getStore();
}

/**
 * Runs `fn` outside any idempotent run: for work that only began within one (an asynchronous
 * reactor run, started by a job queue timer that inherited the accepting request's context).
 */
export function untrackedRun<T>(fn: () => Promise<T>): Promise<T> {
  return scope.exit(fn);
}
