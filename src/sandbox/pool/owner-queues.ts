/**
 * Top-level runs waiting for a worker, one FIFO per owner (SandboxRunInput.owner), served in turn:
 * first across tenants, then across the applications of the tenant whose turn it is, each time the
 * one whose last turn is oldest (turn-order.ts). A run without an owner waits in one anonymous FIFO,
 * a tenant of its own in the round.
 *
 * A turn is a run started: taken from here, or started at once because a worker was free (the pool
 * reports those, `started`), so an owner that already has runs going waits behind one that has not.
 * An owner the pool will not start a run for now (its share of workers is taken) is skipped and
 * keeps its place.
 */
import type { RunTask } from './run-task.js';
import type { RunOwner } from '../sandbox.js';
import { TurnOrder } from './turn-order.js';

/** Owners (per level) whose last turn is remembered while they have nothing waiting. */
const REMEMBERED = 256;

/** A tenant's waiting runs: its applications' FIFOs, taking turns. */
interface TenantQueues {
  readonly apps: TurnOrder<string | null, RunTask[]>;
  size: number;
}

/** What an owner has waiting: runs of its application, and of its whole tenant. */
export interface QueuedCounts {
  application: number;
  tenant: number;
}

const tenantKey = (owner: RunOwner | undefined): string | null => owner?.tenantId ?? null;
const appKey = (owner: RunOwner | undefined): string | null => owner?.applicationId ?? null;
const newTenant = (): TenantQueues => ({ apps: new TurnOrder((fifo) => fifo.length === 0, REMEMBERED), size: 0 });
const newFifo = (): RunTask[] => [];

export class OwnerQueues {
  readonly #tenants = new TurnOrder<string | null, TenantQueues>((tenant) => tenant.size === 0, REMEMBERED);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Queues `task` at the back of its owner's FIFO. */
  push(task: RunTask): void {
    const tenant = this.#tenants.join(tenantKey(task.owner), newTenant);
    tenant.apps.join(appKey(task.owner), newFifo).push(task);
    tenant.size++;
    this.#size++;
  }

  /** Removes `task` wherever it waits; false when it was not queued. */
  delete(task: RunTask): boolean {
    const t = tenantKey(task.owner);
    const tenant = this.#tenants.get(t);
    const a = appKey(task.owner);
    const fifo = tenant?.apps.get(a);
    const i = fifo?.indexOf(task) ?? -1;
    if (i < 0) return false;
    fifo!.splice(i, 1);
    tenant!.size--;
    this.#size--;
    tenant!.apps.settle(a);
    this.#tenants.settle(t);
    return true;
  }

  queued(owner: RunOwner | undefined): QueuedCounts {
    const tenant = this.#tenants.get(tenantKey(owner));
    return { application: tenant?.apps.get(appKey(owner))?.length ?? 0, tenant: tenant?.size ?? 0 };
  }

  /** The run whose turn it is among owners whose oldest run `mayStart`; not removed (see `served`). */
  next(mayStart: (task: RunTask) => boolean): RunTask | undefined {
    for (const [, tenant] of this.#tenants.waiting()) {
      for (const [, fifo] of tenant.apps.waiting()) {
        if (mayStart(fifo[0]!)) return fifo[0];
      }
    }
    return undefined;
  }

  /** Removes `task` (given by `next`) and counts its start as its owner's turn. */
  served(task: RunTask): void {
    if (this.delete(task)) this.started(task);
  }

  /** Counts a run started without waiting here as its owner's turn. */
  started(task: RunTask): void {
    this.#tenants.turn(tenantKey(task.owner), newTenant).apps.turn(appKey(task.owner), newFifo);
  }

  /**
   * The run to push out of a full queue to make room for one of `owner`: the newest run of the
   * owner holding the most of the queue, when that is more than one run beyond what `owner` would
   * hold (first among tenants, then among the applications of `owner`'s tenant). None when `owner`
   * already holds about as much as anyone: then the newcomer is the one refused.
   */
  evictable(owner: RunOwner | undefined): RunTask | undefined {
    const own = this.queued(owner);
    const t = tenantKey(owner);
    const widest = largest(this.#tenants.waiting(), (tenant) => tenant.size);
    if (widest !== undefined && widest[0] !== t && widest[1].size > own.tenant + 1) {
      return largest(widest[1].apps.waiting(), (fifo) => fifo.length)?.[1].at(-1);
    }
    const app = largest(this.#tenants.get(t)?.apps.waiting() ?? [], (fifo) => fifo.length);
    if (app !== undefined && app[0] !== appKey(owner) && app[1].length > own.application + 1) return app[1].at(-1);
    return undefined;
  }

  /** Every waiting run. */
  all(): RunTask[] {
    return [...this.#tenants.waiting()].flatMap(([, tenant]) => [...tenant.apps.waiting()].flatMap(([, fifo]) => fifo));
  }
}

/** The entry with the largest `measure`; the one whose turn was latest among equals. */
function largest<K, V>(entries: Iterable<[K, V]>, measure: (value: V) => number): [K, V] | undefined {
  let best: [K, V] | undefined;
  for (const entry of entries) if (best === undefined || measure(entry[1]) >= measure(best[1])) best = entry;
  return best;
}
