/**
 * One reactor run in a prepared QuickJS context: evaluate the code, call the prelude's `run`, then
 * drive the returned promise, bridging host promises (bt calls, fetch, timers) in between.
 *
 * This uses the synchronous QuickJS build: host promises are bridged with `context.newPromise()` and
 * `runtime.executePendingJobs()` rather than asyncify, which costs about 11 ms per call here
 * (ARCHITECTURE.md, Reference facts). The interrupt handler stops CPU-bound code at the deadline; while the reactor awaits
 * the host nothing runs inside QuickJS, so the deadline is also raced on the host side.
 *
 * Deadlines use `performance.now()`, not the injected Clock: a wall-time budget must advance while
 * code spins, which a test's manual clock would not.
 */
import type { LogBuffer } from '../bridge.js';
import type { InterruptTuner } from './interrupt-tuner.js';
import { crashOf, isModuleFailure } from './module-failure.js';
import type { PreparedContext } from './prepared-context.js';
import { RunSession } from './run-session.js';
import type { SandboxLimits, SandboxRunInput, SandboxRunOutput } from '../sandbox.js';

/** A run as the engine takes it: `req` already JSON text (the worker receives it so, worker-protocol.ts). */
export interface EngineRunInput extends Omit<SandboxRunInput, 'req'> {
  reqJson: string;
}

/** What runInContext needs besides the run: its engine's module state. */
export interface RunContextHooks {
  tuner: InterruptTuner | null;
  /** Takes the context once the run's own handles are freed; frees it now or in an idle turn (context-pool.ts). */
  release: (prepared: PreparedContext) => void;
  onModuleFailure: () => void;
}

/**
 * Runs `input` in `prepared`, which it owns from now on: when the run ends its handles are freed
 * and the context goes to `release`, never to another run (unless the module failed under it;
 * then it is abandoned with the module).
 * @param reqJson `req` as JSON text (`{ args, configuration, ... }`), as the prelude's `run` takes it.
 * @throws ReactorError for every failure of the reactor; SandboxCrash when the module failed during
 *   the run. A module failure while freeing keeps the run's outcome and calls `onModuleFailure`.
 */
export async function runInContext(
  prepared: PreparedContext,
  input: EngineRunInput,
  limits: SandboxLimits,
  hooks: RunContextHooks,
  budgetMs: number = limits.timeoutMs,
): Promise<SandboxRunOutput> {
  const deadline = performance.now() + Math.min(budgetMs, limits.timeoutMs);
  let interrupted = false;
  let crashed = false;
  const { runtime } = prepared;
  let session: RunSession | undefined;
  try {
    session = new RunSession(prepared, input, limits, deadline);
    runtime.setMemoryLimit(limits.memoryBytes);
    runtime.setMaxStackSize(limits.maxStackBytes);
    const onInterrupt = (): void => {
      interrupted = true;
    };
    const { tuner } = hooks;
    runtime.setInterruptHandler(
      tuner !== null
        ? tuner.handler(prepared.context, deadline, onInterrupt)
        : () => {
            if (performance.now() <= deadline) return false;
            onInterrupt();
            return true;
          },
    );
    prepared.port = session;
    const result = await session.drive(() => interrupted);
    reportLogs(input, session.logs);
    return { result, logs: session.logs.lines, logsTruncated: session.logs.truncated };
  } catch (error) {
    if (session !== undefined) reportLogs(input, session.logs);
    if (isModuleFailure(error)) {
      crashed = true;
      throw crashOf(error);
    }
    throw error;
  } finally {
    if (!crashed) {
      try {
        session?.dispose();
        hooks.release(prepared);
      } catch (error) {
        // QuickJS asserts on objects still alive when a runtime is freed (seen after interrupting a
        // promise-job flood); the abort kills the module, but the run's outcome stands.
        if (!isModuleFailure(error)) throw error;
        hooks.onModuleFailure();
      }
    }
  }
}

/** Hands the run's console output to the caller's `onLogs`; a throwing sink never changes the run's outcome. */
function reportLogs(input: EngineRunInput, logs: LogBuffer): void {
  if (input.onLogs === undefined || logs.lines.length === 0) return;
  try {
    input.onLogs(logs.lines, logs.truncated);
  } catch {
    // The sink is the caller's logger: its failure is not the reactor's.
  }
}
