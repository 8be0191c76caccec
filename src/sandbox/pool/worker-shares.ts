/** The pool's share caps (worker-pool.ts): how many shared workers one owner's runs may hold. */
import type { PoolWorker } from './pool-worker.js';
import type { RunTask } from './run-task.js';
import type { SandboxWorkerOptions } from './worker-options.js';

/**
 * Whether one more shared worker for `task` keeps its owner (its application, and its tenant)
 * within its caps, counting the runs on the shared workers now. A run without an owner has no caps;
 * extra workers (nesting lanes) count in no share. Counted afresh at each decision rather than kept
 * as a tally, so no path that frees a worker can leave a stale count behind. A worker counts once,
 * however many runs of its owner it holds.
 */
export function mayHoldShared(workers: Iterable<PoolWorker>, caps: Pick<SandboxWorkerOptions, 'maxRunningPerApplication' | 'maxRunningPerTenant'>, task: RunTask): boolean {
  const owner = task.owner;
  if (owner === undefined) return true;
  let tenant = 0;
  let application = 0;
  for (const w of workers) {
    const held = w.lane === 0 ? w.owner : undefined;
    if (held?.tenantId !== owner.tenantId) continue;
    tenant++;
    if (held.applicationId === owner.applicationId) application++;
  }
  return application < caps.maxRunningPerApplication && tenant < caps.maxRunningPerTenant;
}
