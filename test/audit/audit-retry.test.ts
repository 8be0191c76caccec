import { describe, expect, it } from 'vitest';
import { AuditLog } from '../../src/audit/audit.js';
import { ManualClock } from '../../src/common/clock.js';
import { ServiceUnavailableError, ValidationError } from '../../src/errors/errors.js';
import type { Logger } from '../../src/common/logger.js';
import type { AuditEntry, Store } from '../../src/storage/store.js';

/** A store whose appendAudit fails while `failing` holds, recording what it stored. */
function flakyStore() {
  const stored: AuditEntry[] = [];
  const state = { failing: null as Error | null };
  const store = {
    appendAudit: async (entries: readonly AuditEntry[]) => {
      if (state.failing) throw state.failing;
      stored.push(...entries);
    },
  } as unknown as Store;
  return { store, stored, state };
}

function capturingLogger() {
  const lines: { level: string; message: string; fields: Record<string, unknown> | undefined }[] = [];
  const logger: Logger = {
    info: (message, fields) => lines.push({ level: 'info', message, fields }),
    warn: (message, fields) => lines.push({ level: 'warn', message, fields }),
    error: (message, fields) => lines.push({ level: 'error', message, fields }),
  };
  return { logger, lines };
}

const read = (i: number) => ({ tenantId: 't', actor: 'a', operation: 'token:read', resourceId: `tok-${i}`, outcome: 'success' as const });

/** An audit batch whose flush failed is kept and retried, never dropped on a transient error. */
describe('AuditLog flush failures', () => {
  it('keeps a batch whose flush failed, logs it, counts it, and stores it on the next flush in order', async () => {
    const { store, stored, state } = flakyStore();
    const { logger, lines } = capturingLogger();
    const audit = new AuditLog(store, new ManualClock(), logger, { flushMs: 60_000 });
    audit.record(read(1));
    audit.record(read(2));
    state.failing = new ServiceUnavailableError();
    await audit.flush();
    expect(stored).toEqual([]);
    expect(audit.stats()).toEqual({ queued: 2, flushFailures: 1, droppedEntries: 0 });
    expect(lines.map((l) => l.message)).toEqual(['audit flush failed; the entries are kept and retried']);
    audit.record(read(3));
    state.failing = null;
    await audit.flush();
    expect(stored.map((e) => e.resourceId)).toEqual(['tok-1', 'tok-2', 'tok-3']);
    expect(audit.stats()).toEqual({ queued: 0, flushFailures: 1, droppedEntries: 0 });
  });

  it('is bounded: past maxQueued the oldest entries are dropped, counted and logged', async () => {
    const { store, stored, state } = flakyStore();
    const { logger, lines } = capturingLogger();
    const audit = new AuditLog(store, new ManualClock(), logger, { flushMs: 60_000, maxBatch: 100, maxQueued: 3 });
    state.failing = new Error('connection terminated');
    for (let i = 1; i <= 5; i++) audit.record(read(i));
    await audit.flush();
    expect(audit.stats()).toEqual({ queued: 3, flushFailures: 1, droppedEntries: 2 });
    expect(lines.some((l) => l.level === 'error' && l.message === 'audit entries dropped: the queue is full' && l.fields?.['entries'] === 2)).toBe(true);
    state.failing = null;
    await audit.flush();
    expect(stored.map((e) => e.resourceId)).toEqual(['tok-3', 'tok-4', 'tok-5']);
  });

  it('after close, drops (counts, logs) an entry recorded by work that outlived the vault, instead of retrying a closed store', async () => {
    const { store, stored } = flakyStore();
    const { logger, lines } = capturingLogger();
    const appended: number[] = [];
    const counted = { ...store, appendAudit: (entries: readonly AuditEntry[]) => (appended.push(entries.length), store.appendAudit(entries)) } as Store;
    const audit = new AuditLog(counted, new ManualClock(), logger, { flushMs: 60_000 });
    audit.record(read(1));
    await audit.close();
    audit.record(read(2));
    await audit.flush();
    expect(stored.map((e) => e.resourceId)).toEqual(['tok-1']);
    expect(appended).toEqual([1]);
    expect(audit.stats()).toEqual({ queued: 0, flushFailures: 0, droppedEntries: 1 });
    expect(lines).toEqual([{ level: 'error', message: 'audit entry dropped: recorded after the vault closed', fields: { entries: 1 } }]);
  });

  it('stores an entry recorded while close() is flushing: the store is still open, so it is neither dropped nor blamed on the store', async () => {
    const { store, stored } = flakyStore();
    const { logger, lines } = capturingLogger();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // The first append (close's flush) waits at the gate, as a database round trip would.
    let appends = 0;
    const appendAudit = async (entries: readonly AuditEntry[]) => {
      if (++appends === 1) await gate;
      return store.appendAudit(entries);
    };
    const slow = { ...store, appendAudit } as Store;
    const audit = new AuditLog(slow, new ManualClock(), logger, { flushMs: 60_000 });
    audit.record(read(1));
    const closing = audit.close();
    // Let close's flush take its batch and start its append.
    await new Promise((resolve) => setImmediate(resolve));
    audit.record(read(2));
    release();
    await closing;
    expect(stored.map((e) => e.resourceId)).toEqual(['tok-1', 'tok-2']);
    expect(audit.stats()).toEqual({ queued: 0, flushFailures: 0, droppedEntries: 0 });
    expect(lines).toEqual([]);
  });

  it('a store failing at close is tried once: its entries are dropped (counted, logged), with no second wait on it', async () => {
    const { store, state } = flakyStore();
    const { logger, lines } = capturingLogger();
    let appends = 0;
    const appendAudit = (entries: readonly AuditEntry[]) => (appends++, store.appendAudit(entries));
    const audit = new AuditLog({ ...store, appendAudit } as Store, new ManualClock(), logger, { flushMs: 60_000 });
    audit.record(read(1));
    state.failing = new ServiceUnavailableError();
    await audit.close();
    expect(appends).toBe(1);
    expect(audit.stats()).toEqual({ queued: 0, flushFailures: 1, droppedEntries: 1 });
    expect(lines.at(-1)).toEqual({ level: 'error', message: 'audit entries dropped: the store failed at close', fields: { entries: 1 } });
  });

  it('drops (and counts) a batch the store refuses as invalid, which no retry would store', async () => {
    const { store, state } = flakyStore();
    const audit = new AuditLog(store, new ManualClock(), capturingLogger().logger, { flushMs: 60_000 });
    audit.record(read(1));
    state.failing = ValidationError.field('input', 'is invalid');
    await audit.flush();
    expect(audit.stats()).toEqual({ queued: 0, flushFailures: 1, droppedEntries: 1 });
  });

  it('replaces a NUL in the resource id of a failure entry, so one entry never makes its batch unstorable', async () => {
    const { store, stored } = flakyStore();
    const audit = new AuditLog(store, new ManualClock(), capturingLogger().logger);
    audit.recordFailure({ tenantId: 't', applicationId: 'a' }, 'token:read', 'a\u0000b', new Error('x'));
    await audit.flush();
    expect(stored.map((e) => e.resourceId)).toEqual(['a\uFFFDb']);
  });
});
