/**
 * The worker threads reactor code runs in (ARCHITECTURE.md, Rules of the house: reactor code never runs on the thread that
 * serves requests). Each run has its own QuickJS runtime and context. A worker holds the runs of one
 * owner at a time: one, or up to `runsPerWorker` interleaved while they await the host.
 *
 * Scheduling:
 * - Up to `size` shared workers, started on demand and kept idle (unref'd) between runs.
 * - Shares. A run may name its owner (a tenant and an application of it; the vault passes the
 *   invoking one). One application holds at most `maxRunningPerApplication` shared workers at once
 *   and one tenant `maxRunningPerTenant`, even while the others are idle: a worker changes hands only
 *   when its run ends, which for a spinning run is its deadline (10 s by default), so the room another
 *   owner finds at once is exactly the room no single owner may take. Runs without an owner have no
 *   caps (a custom caller that names none asked for no fairness).
 * - Placement. Which worker a run starts on (an idle one, a busy one of its owner it interleaves
 *   with, a new one, its nesting depth's extra one), or whether it waits, is decided in
 *   worker-placement.ts, which says when runs interleave and what that costs their owner.
 * - A top-level run that finds no free worker, or whose owner holds its share, waits in a queue of
 *   per-owner FIFOs served round-robin, tenants first, then the applications of the tenant
 *   (run-queue.ts, owner-queues.ts). Its time limit does not run there: it starts when the run is
 *   handed to its worker (run-task.ts). The wait is bounded by `maxQueueWaitMs`, after which the
 *   run fails with 503 and Retry-After. While only runs of one owner wait, a worker of that owner
 *   whose runs all await the host takes the next of them (up to `runsPerWorker`), so runs that
 *   await a slow upstream overlap instead of queueing one behind another. The queue holds at most
 *   `maxQueued` runs, of which one application at most `maxQueuedPerApplication` and one tenant
 *   `maxQueuedPerTenant`: beyond its share, an owner's run fails at once with 503. When the queue is
 *   full, a newcomer whose owner holds less of it than another pushes out that owner's newest run
 *   (which fails with 503) instead of being refused, so several floods together cannot shut another
 *   owner out either. Refusals are 503, not 429 (run-queue.ts says why).
 * - A nested run (started from a `req.bt` call of a running reactor, run-task.ts) is served before
 *   queued top-level runs, and may use one extra worker per nesting depth, which counts in no share
 *   (worker-placement.ts says why).
 * - At the deadline the engine in the worker stops the run itself; if it has not reported back
 *   KILL_GRACE_MS later (one long built-in call, which QuickJS's interrupt handler cannot stop), the
 *   worker is terminated and the run fails with the same timeout error.
 * - A worker whose WebAssembly memory grew past `recycleAboveBytes` is terminated once its runs have
 *   ended (that memory never shrinks), so memory taken by a burst returns to the system.
 */
import { type HostAnswer, reportLogs, serveCall, serveFetch } from './host-calls.js';
import { fileURLToPath } from 'node:url';
import { type PoolWorker, type WorkerSpawnOptions, spawnPoolWorker } from './pool-worker.js';
import { memoryError, runtimeError, timeoutError, unavailableError } from '../reactor-outcome.js';
import { RunQueue } from './run-queue.js';
import type { RunTask } from './run-task.js';
import type { SandboxWorkerOptions } from './worker-options.js';
import { idleWorker, type PoolView, placeRun, spawnIfRoom } from './worker-placement.js';
import { mayHoldShared } from './worker-shares.js';
import type { DoneMessage, FromWorker, ReplyMessage, RunMessage } from '../worker-protocol.js';
import { deserializeRunError } from '../worker-protocol.js';

export { KILL_GRACE_MS } from './run-task.js';

/** How long a run waited for a worker and, once it had one, ran (reported as each run ends). */
export interface RunTimes {
  /** From submission until its worker took it, or until it ended without one. */
  queuedMs: number;
  /** From its worker taking it until it ended; null when it never started. */
  runMs: number | null;
}

export interface WorkerPoolOptions extends SandboxWorkerOptions, WorkerSpawnOptions {
  /** Told of every run's queue and run time as it ends (metrics); what it throws is ignored. */
  onRunTimes?: (times: RunTimes) => void;
}

export interface WorkerPoolStats {
  /** Workers alive (shared and extra). */
  workers: number;
  /** Workers with at least one run. */
  busy: number;
  /** Runs on workers (more than `busy` when runs interleave on one worker). */
  running: number;
  /** Runs waiting for a worker. */
  queued: number;
  spawned: number;
  /** Workers terminated to end a run (deadline passed, or its caller ended). */
  terminated: number;
  /** Workers retired after a run because their WebAssembly memory had grown past the threshold. */
  recycled: number;
  /** Workers that exited on their own (out of heap, crash, failed start). */
  crashed: number;
}

export class WorkerPool {
  readonly #options: WorkerPoolOptions;
  readonly #workers = new Set<PoolWorker>();
  readonly #queue: RunQueue;
  #closed = false;
  readonly #counts = { spawned: 0, terminated: 0, recycled: 0, crashed: 0 };

  constructor(options: WorkerPoolOptions) {
    this.#options = options;
    this.#queue = new RunQueue(options);
  }

  /**
   * Makes sure one shared worker is idle or starting, room permitting: a worker takes a few hundred
   * ms to start, which the next run should not wait for.
   */
  warm(): void {
    if (this.#closed || idleWorker(this.#workers, 0) !== null) return;
    try {
      spawnIfRoom(this.#view(), 0);
    } catch {
      // The next run reports it.
    }
  }

  /** Starts `task` on a worker, or queues it; settles the task on every outcome. */
  submit(task: RunTask): void {
    if (this.#closed) return task.fail(unavailableError('The reactor sandbox is closed'));
    const observe = this.#options.onRunTimes;
    if (observe !== undefined) task.onDone(() => reportTimes(task, observe));
    if (this.#tryStart(task)) return this.#queue.started(task);
    const admission = this.#queue.add(task);
    if (!admission.queued) return task.fail(unavailableError(admission.reason));
    task.awaitWorker(this.#options.maxQueueWaitMs);
    admission.evicted?.fail(unavailableError('Pushed out of the full run queue to make room for a run of an owner with fewer runs waiting; try again'));
  }

  stats(): WorkerPoolStats {
    let busy = 0;
    let running = 0;
    for (const w of this.#workers) {
      if (!w.idle) busy++;
      running += w.tasks.size;
    }
    return { workers: this.#workers.size, busy, running, queued: this.#queue.size, ...this.#counts };
  }

  /** Fails every queued and running run with 503 and terminates the workers. */
  async close(): Promise<void> {
    this.#closed = true;
    const error = unavailableError('The reactor sandbox is closed');
    for (const task of this.#queue.all()) task.fail(error);
    const workers = [...this.#workers];
    for (const w of workers) {
      const tasks = [...w.tasks];
      this.#drop(w);
      for (const task of tasks) task.fail(error);
    }
    await Promise.all(workers.map((w) => w.worker.terminate()));
  }

  #tryStart(task: RunTask): boolean {
    let worker: PoolWorker | null;
    try {
      worker = placeRun(this.#view(), task);
    } catch (error) {
      task.fail(this.#startFailure(error));
      return true;
    }
    if (worker === null) return false;
    this.#start(worker, task);
    return true;
  }

  /** What the placement decision (worker-placement.ts) reads of the pool now. */
  #view(): PoolView {
    return { workers: this.#workers, options: this.#options, queued: this.#queue.size, spawn: (lane) => this.#spawn(lane) };
  }

  #spawn(lane: number): PoolWorker {
    const w = spawnPoolWorker(this.#options, lane, {
      onMessage: (worker, message) => this.#onMessage(worker, message),
      onExit: (worker, error) => this.#onExit(worker, error),
    });
    this.#workers.add(w);
    this.#counts.spawned++;
    return w;
  }

  #start(w: PoolWorker, task: RunTask): void {
    if (task.parent !== null && task.parent.deadline - performance.now() < 1) {
      task.fail(timeoutError(task.limits));
      return this.#next(w);
    }
    w.add(task);
    // A busy worker keeps the process alive (while it starts, its run has no timer of its own).
    w.worker.ref();
    clearTimeout(task.timer);
    task.state = 'running';
    task.abort = (error) => {
      const others = [...w.tasks].filter((t) => t !== task);
      this.#retire(w);
      this.#counts.terminated++;
      task.fail(error);
      const shared = unavailableError('Reactor run ended: its worker was terminated to stop another run of the same application that passed its deadline; try again');
      for (const other of others) other.fail(shared);
    };
    // A worker still starting posts the run once ready: its start-up is not the reactor's time
    // (a worker that fails to start reports it, failing the run with 503).
    if (w.ready) this.#post(w, task);
  }

  /** Hands `task` to its worker: its time limit starts now (run-task.ts). */
  #post(w: PoolWorker, task: RunTask): void {
    const budgetMs = Math.max(1, Math.floor(task.begin()));
    const { input } = task;
    const message: RunMessage = {
      type: 'run',
      run: task.id,
      code: input.code,
      reqJson: task.reqJson,
      btPaths: task.api === null ? null : [...task.api.keys()],
      hasFetch: input.host.fetch !== null,
      limits: task.limits,
      budgetMs,
    };
    w.worker.postMessage(message);
  }

  #onMessage(w: PoolWorker, message: FromWorker): void {
    if (message.type === 'ready') {
      w.ready = true;
      // Only a single run can wait for a worker to start: runs join started workers only.
      const [waiting] = w.tasks;
      if (waiting !== undefined && !w.gone) this.#post(w, waiting);
      return;
    }
    const task = w.gone ? undefined : w.find(message.run);
    if (task === undefined) return;
    if (message.type === 'done') return this.#done(w, task, message);
    w.hostCall(task, 1);
    this.#join(w);
    const reply = (answer: HostAnswer) => this.#reply(w, task, message.op, answer);
    if (message.type === 'call') serveCall(task, message, reply);
    else serveFetch(task, message, reply);
  }

  #reply(w: PoolWorker, task: RunTask, op: number, answer: HostAnswer): void {
    // An answer for a run that has ended (or moved off this worker) is dropped.
    if (w.gone || !w.tasks.has(task)) return;
    w.hostCall(task, -1);
    const message: ReplyMessage = { type: 'reply', run: task.id, op, ...answer };
    w.worker.postMessage(message);
  }

  #done(w: PoolWorker, task: RunTask, m: DoneMessage): void {
    w.remove(task);
    if (w.idle) w.worker.unref();
    reportLogs(task, m.logs, m.logsTruncated);
    if (m.ok) task.succeed({ result: JSON.parse(m.resultJson ?? 'null'), logs: m.logs, logsTruncated: m.logsTruncated });
    else task.fail(m.error === undefined ? runtimeError('Reactor failed in the sandbox') : deserializeRunError(m.error));
    if (m.wasmMemoryBytes > this.#options.recycleAboveBytes) w.draining = true;
    if (!w.idle) return this.#join(w);
    if (w.draining) {
      this.#counts.recycled++;
      return this.#retire(w);
    }
    this.#next(w);
  }

  #onExit(w: PoolWorker, error: (Error & { code?: string }) | null): void {
    if (w.gone) return;
    const tasks = [...w.tasks];
    const started = w.ready;
    this.#drop(w);
    this.#counts.crashed++;
    for (const task of tasks) {
      if (error?.code === 'ERR_WORKER_OUT_OF_MEMORY') task.fail(memoryError(task.limits));
      else if (!started) task.fail(this.#startFailure(error));
      else task.fail(runtimeError('Reactor crashed the sandbox'));
    }
    this.#pump();
  }

  /**
   * A worker that did not start is a fault of the installation, not of load: the 503 names the
   * worker file, the cause and the option, and says nothing of trying again (docs/bundling.md).
   */
  #startFailure(error: unknown): Error {
    const cause = error instanceof Error ? error.message : 'it did not become ready within 30 s';
    return unavailableError(`The reactor sandbox could not start a worker from ${fileURLToPath(this.#options.workerUrl)}: ${cause} (option reactors.workerFile, docs/bundling.md)`);
  }

  /** Gives a worker whose runs have all ended its next run, or leaves it idle. */
  #next(w: PoolWorker): void {
    if (w.gone || this.#closed || !w.idle) return;
    const task = this.#queue.take(w.lane, (t) => mayHoldShared(this.#workers, this.#options, t));
    if (task !== undefined) this.#start(w, task);
  }

  /**
   * Gives a busy worker whose runs all await the host the next waiting run of its owner, while no
   * other owner's run waits (worker-placement.ts, Interleaving): a burst of one owner's runs that
   * await a slow upstream then overlaps on the worker instead of running one after another.
   */
  #join(w: PoolWorker): void {
    if (w.gone || this.#closed || w.lane !== 0) return;
    const task = this.#queue.takeJoining(w.owner, (t) => w.accepts(t, this.#options.runsPerWorker));
    if (task !== undefined) this.#start(w, task);
  }

  /** Starts waiting runs on the room a terminated worker left. */
  #pump(): void {
    if (this.#closed) return;
    this.#queue.drain(
      (task) => this.#tryStart(task),
      (task) => mayHoldShared(this.#workers, this.#options, task),
    );
  }

  /**
   * Terminates a worker and starts a replacement at once (a shared one only), so the next run does
   * not wait for a worker to start; waiting runs take the room first.
   */
  #retire(w: PoolWorker): void {
    this.#drop(w);
    // eslint-disable-next-line @typescript-eslint/no-floating-promises -- Worker.terminate() does not reject: it resolves with the exit code (undefined once the worker is gone)
    void w.worker.terminate();
    this.#pump();
    if (w.lane === 0) this.warm();
  }

  #drop(w: PoolWorker): void {
    w.gone = true;
    w.tasks.clear();
    this.#workers.delete(w);
  }
}

function reportTimes(task: RunTask, observe: (times: RunTimes) => void): void {
  const now = performance.now();
  const started = !Number.isNaN(task.startedAt);
  try {
    observe({ queuedMs: started ? task.queuedMs : now - task.submittedAt, runMs: started ? now - task.startedAt : null });
  } catch {
    // A metrics sink's failure is not the run's.
  }
}
