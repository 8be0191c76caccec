/**
 * A run's time in the queue is not its run time (run-task.ts): its time limit starts when its worker
 * takes it (`begin`), and its wait for a worker is bounded on its own, ending in a 503 with
 * Retry-After. Timers and performance.now() are faked, so time moves only when the test says.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ServiceUnavailableError } from '../../src/errors/errors.js';
import { RunTask } from '../../src/sandbox/pool/run-task.js';
import { DEFAULT_SANDBOX_LIMITS } from '../../src/sandbox/sandbox.js';

const LIMITS = { ...DEFAULT_SANDBOX_LIMITS, timeoutMs: 50 };
let ids = 0;
function task(): { task: RunTask; outcome: () => unknown } {
  const t = new RunTask(++ids, { code: '', req: { args: null, configuration: {} }, host: { bt: null, fetch: null } }, LIMITS, null, '{}', null);
  let outcome: unknown = 'pending';
  t.promise.then(
    (value) => (outcome = value),
    (error: unknown) => (outcome = error),
  );
  return { task: t, outcome: () => outcome };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a queued run', () => {
  it('has no deadline while it waits, however long past its time limit, and gets its whole limit once it begins', async () => {
    const { task: t, outcome } = task();
    t.awaitWorker(60_000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(outcome()).toBe('pending');
    expect(t.deadline).toBe(Number.POSITIVE_INFINITY);
    t.state = 'running';
    expect(t.begin()).toBe(50);
    expect(t.queuedMs).toBe(10_000);
    await vi.advanceTimersByTimeAsync(49);
    expect(outcome()).toBe('pending');
    // At the deadline the engine stops the run; a run that has not reported back a grace later is cancelled.
    await vi.advanceTimersByTimeAsync(1 + 100);
    expect(outcome()).toMatchObject({ kind: 'ReactorRuntimeError', message: 'Reactor exceeded its time limit of 50 ms' });
  });

  it('that waits past the bound fails with 503 and Retry-After, not the time limit error', async () => {
    const { task: t, outcome } = task();
    t.awaitWorker(2_500);
    await vi.advanceTimersByTimeAsync(2_499);
    expect(outcome()).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome()).toBeInstanceOf(ServiceUnavailableError);
    expect(outcome()).toMatchObject({ retryAfterSeconds: 3, message: 'No reactor worker was free within 2500 ms; try again' });
  });

  it('that its worker took before the bound is not failed by it', async () => {
    const { task: t, outcome } = task();
    t.awaitWorker(100);
    t.state = 'running';
    t.begin();
    t.succeed({ result: 1, logs: [], logsTruncated: false });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(outcome()).toEqual({ result: 1, logs: [], logsTruncated: false });
  });
});
