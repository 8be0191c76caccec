/**
 * The fair run queue (run-queue.ts, owner-queues.ts) on its own: owners served round-robin, tenants
 * first; each owner's runs in order; shares of the queue; a full queue making room for a smaller
 * owner; nested runs first; and no owner starved, whatever another queues.
 */
import { describe, expect, it } from 'vitest';
import { RunQueue, type QueueShares } from '../../src/sandbox/pool/run-queue.js';
import { RunTask } from '../../src/sandbox/pool/run-task.js';
import { DEFAULT_SANDBOX_LIMITS, type RunOwner } from '../../src/sandbox/sandbox.js';

const SHARES: QueueShares = { maxQueued: 100, maxQueuedPerApplication: 100, maxQueuedPerTenant: 100 };
const ANYONE = () => true;

let ids = 0;
/** A run of `owner` (none: anonymous), nested under `parent` when given. */
function task(owner: RunOwner | undefined, parent: RunTask | null = null, name = ''): RunTask {
  const input = { code: name, req: { args: null, configuration: {} }, host: { bt: null, fetch: null }, ...(owner ? { owner } : {}) };
  const t = new RunTask(++ids, input, DEFAULT_SANDBOX_LIMITS, null, '{}', parent);
  t.promise.catch(() => undefined);
  return t;
}

const owner = (tenantId: string, applicationId: string): RunOwner => ({ tenantId, applicationId });
const A = owner('t1', 'a');
const A2 = owner('t1', 'a2');
const B = owner('t2', 'b');

/** Queues runs named `${name}${i}`, and returns the queue. */
function queueOf(shares: QueueShares, ...runs: [RunOwner | undefined, string][]): RunQueue {
  const queue = new RunQueue(shares);
  for (const [o, name] of runs) expect(queue.add(task(o, null, name))).toEqual({ queued: true });
  return queue;
}

/** Names of the runs `take` gives, until none. */
function order(queue: RunQueue, mayStart = ANYONE): string[] {
  const out: string[] = [];
  for (let t = queue.take(0, mayStart); t !== undefined; t = queue.take(0, mayStart)) out.push(t.input.code);
  return out;
}

describe('round robin', () => {
  it('serves tenants in turn, then the applications of the served tenant in turn; each owner in order', () => {
    const queue = queueOf(SHARES, [A, 'a1'], [A, 'a2'], [A, 'a3'], [A2, 'x1'], [B, 'b1'], [B, 'b2']);
    expect(order(queue)).toEqual(['a1', 'b1', 'x1', 'b2', 'a2', 'a3']);
    expect(queue.size).toBe(0);
  });

  it('serves an owner that arrives behind a flood next, not after the flood', () => {
    const queue = queueOf(SHARES, ...Array.from({ length: 50 }, (_, i): [RunOwner, string] => [A, `a${i}`]));
    expect(queue.take(0, ANYONE)?.input.code).toBe('a0');
    queue.add(task(A2, null, 'x'));
    queue.add(task(B, null, 'b'));
    expect([queue.take(0, ANYONE), queue.take(0, ANYONE), queue.take(0, ANYONE)].map((t) => t?.input.code)).toEqual(['b', 'x', 'a1']);
  });

  it('starves no owner: one that keeps a run waiting is served at least every other turn while another floods', () => {
    const queue = queueOf(SHARES, ...Array.from({ length: 60 }, (_, i): [RunOwner, string] => [A, `a${i}`]));
    let sinceB = 0;
    queue.add(task(B, null, 'b'));
    for (let i = 0; i < 60; i++) {
      const next = queue.take(0, ANYONE)!;
      if (next.input.code === 'b') {
        sinceB = 0;
        queue.add(task(B, null, 'b'));
      } else sinceB++;
      expect(sinceB).toBeLessThanOrEqual(1);
    }
  });

  it("counts a run that started without waiting as its owner's turn", () => {
    const queue = new RunQueue(SHARES);
    queue.started(task(A, null, 'a-direct'));
    queue.add(task(A, null, 'a1'));
    queue.add(task(B, null, 'b1'));
    expect(order(queue)).toEqual(['b1', 'a1']);
  });

  it('starves no owner with a long queue while others take turns one run at a time, resubmitting at once', () => {
    const queue = queueOf(SHARES, ...Array.from({ length: 30 }, (_, i): [RunOwner, string] => [B, `b${i}`]));
    const others = [owner('t3', 'c'), owner('t4', 'd'), owner('t5', 'e')];
    for (const o of others) queue.add(task(o, null, o.applicationId));
    let sinceB = 0;
    for (let i = 0; i < 40; i++) {
      const next = queue.take(0, ANYONE)!;
      if (next.owner === B) sinceB = 0;
      else {
        sinceB++;
        queue.add(task(next.owner, null, next.input.code)); // its next run, at once
      }
      expect(sinceB).toBeLessThanOrEqual(others.length);
    }
  });

  it('skips an owner the pool will not start a run for, which keeps its place for when it may', () => {
    const queue = queueOf(SHARES, [A, 'a1'], [A, 'a2'], [B, 'b1'], [B, 'b2']);
    const notA = (t: RunTask) => t.owner?.applicationId !== 'a';
    expect(queue.take(0, notA)?.input.code).toBe('b1');
    expect(queue.take(0, notA)?.input.code).toBe('b2');
    expect(queue.take(0, notA)).toBeUndefined();
    expect(order(queue)).toEqual(['a1', 'a2']);
  });

  it('forgets a run that ends while it waits (its deadline passed), and its owner once it has none', () => {
    const queue = new RunQueue(SHARES);
    const waiting = task(A, null, 'a1');
    queue.add(waiting);
    queue.add(task(B, null, 'b1'));
    waiting.fail(new Error('timed out'));
    expect(queue.size).toBe(1);
    expect(order(queue)).toEqual(['b1']);
  });

  it('drain starts runs in turn until one finds no room, and leaves the rest in their places', () => {
    const queue = queueOf(SHARES, [A, 'a1'], [A, 'a2'], [B, 'b1']);
    const started: string[] = [];
    queue.drain((t) => (started.length < 2 ? (started.push(t.input.code), true) : false), ANYONE);
    expect(started).toEqual(['a1', 'b1']);
    expect(order(queue)).toEqual(['a2']);
  });
});

describe('shares of the queue', () => {
  it("refuses an application's run beyond its share, and a tenant's beyond the tenant's, while other owners still get in", () => {
    const queue = new RunQueue({ maxQueued: 100, maxQueuedPerApplication: 2, maxQueuedPerTenant: 3 });
    expect(queue.add(task(A))).toEqual({ queued: true });
    expect(queue.add(task(A))).toEqual({ queued: true });
    expect(queue.add(task(A))).toEqual({ queued: false, reason: 'This application already has 2 reactor runs waiting for a worker, its share of the queue; try again' });
    expect(queue.add(task(A2))).toEqual({ queued: true });
    expect(queue.add(task(owner('t1', 'a3')))).toEqual({ queued: false, reason: 'This tenant already has 3 reactor runs waiting for a worker, its share of the queue; try again' });
    expect(queue.add(task(B))).toEqual({ queued: true });
  });

  it('gives runs without an owner no share of their own: only the whole queue bounds them', () => {
    const queue = new RunQueue({ maxQueued: 3, maxQueuedPerApplication: 1, maxQueuedPerTenant: 1 });
    for (let i = 0; i < 3; i++) expect(queue.add(task(undefined))).toEqual({ queued: true });
    expect(queue.add(task(undefined))).toMatchObject({ queued: false, reason: 'Every reactor worker is busy and the run queue is full; try again' });
  });

  it("makes room in a full queue for an owner holding less of it: the largest owner's newest run is pushed out", () => {
    const queue = new RunQueue({ maxQueued: 4, maxQueuedPerApplication: 4, maxQueuedPerTenant: 4 });
    const flood = Array.from({ length: 4 }, (_, i) => task(A, null, `a${i}`));
    for (const t of flood) queue.add(t);
    const b = task(B, null, 'b');
    expect(queue.add(b)).toEqual({ queued: true, evicted: flood[3] });
    // Within a tenant too, by application.
    expect(queue.add(task(A2, null, 'x'))).toEqual({ queued: true, evicted: flood[2] });
    // An owner holding about as much as the largest one is refused instead: no churn.
    expect(queue.add(task(A, null, 'a4'))).toMatchObject({ queued: false, reason: 'Every reactor worker is busy and the run queue is full; try again' });
    // Tenants first: t1 holds 3 (a0, a1, x), t2 one; the newest run of t1's largest application goes.
    expect(queue.add(task(B, null, 'b2'))).toEqual({ queued: true, evicted: flood[1] });
    expect(order(queue)).toEqual(['a0', 'b', 'x', 'b2']);
  });
});

describe('nested runs', () => {
  it('are served before top-level runs, deepest first, whatever their number', () => {
    const queue = new RunQueue({ maxQueued: 1, maxQueuedPerApplication: 1, maxQueuedPerTenant: 1 });
    const root = task(A);
    const child = task(undefined, root, 'depth1');
    const grandchild = task(undefined, child, 'depth2');
    queue.add(task(B, null, 'top'));
    for (const t of [child, grandchild, task(undefined, root, 'depth1-second')]) expect(queue.add(t)).toEqual({ queued: true });
    expect(order(queue)).toEqual(['depth2', 'depth1', 'depth1-second', 'top']);
  });

  it("count as their top-level run's owner, whatever owner they name", () => {
    const root = task(A);
    expect(task(B, root).owner).toEqual(A);
    expect(task(B, task(undefined, root)).owner).toEqual(A);
  });

  it("an extra worker of depth d takes a nested run of depth d even when its owner's share of shared workers is used; a shared worker does not", () => {
    const queue = new RunQueue(SHARES);
    const root = task(A);
    const child = task(A, root, 'child');
    queue.add(child);
    queue.add(task(B, null, 'b'));
    const notA = (t: RunTask) => t.owner !== A;
    expect(queue.take(2, notA)).toBeUndefined();
    expect(queue.take(0, notA)?.input.code).toBe('b');
    expect(queue.take(0, notA)).toBeUndefined();
    expect(queue.take(1, notA)).toBe(child);
  });
});
