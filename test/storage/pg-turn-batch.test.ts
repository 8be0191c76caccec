// The PostgreSQL store's per-turn batches (src/storage/postgres/turn-batch.ts), on stand-in
// statements: with a bound on statements in flight, what is asked for meanwhile waits and goes out
// together once one answers; a statement that never answers holds the others back only STALL_MS.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { STALL_MS, TurnBatch } from '../../src/storage/postgres/turn-batch.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** Stand-in statements that record what each carried and answer only when the test says so. */
function gatedStatements() {
  const sent: string[][] = [];
  const gates: Array<() => void> = [];
  const answer = (keys: readonly string[]) => {
    sent.push([...keys]);
    return new Promise<string[]>((resolve) => gates.push(() => resolve(keys.map((k) => `value of ${k}`))));
  };
  return { sent, gates, one: (key: string) => answer([key]).then(([v]) => v!), many: answer };
}

describe('TurnBatch in-flight bound', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('keys asked for while a statement is in flight go out together once it answers', async () => {
    const { sent, gates, one, many } = gatedStatements();
    const batch = new TurnBatch(one, many, { maxInFlight: 1 });
    const first = batch.load('a');
    await nextTurn();
    expect(sent).toEqual([['a']]);
    // Two later turns: with no bound each would be a statement of its own.
    const second = batch.load('b');
    await nextTurn();
    const third = batch.load('c');
    await nextTurn();
    expect(sent).toEqual([['a']]);
    gates[0]!();
    expect(await first).toBe('value of a');
    await nextTurn();
    expect(sent).toEqual([['a'], ['b', 'c']]);
    gates[1]!();
    expect(await Promise.all([second, third])).toEqual(['value of b', 'value of c']);
    // Idle again: a lone key waits only for the end of its turn.
    const fourth = batch.load('d');
    await nextTurn();
    expect(sent).toEqual([['a'], ['b', 'c'], ['d']]);
    gates[2]!();
    expect(await fourth).toBe('value of d');
  });

  it('without a bound, each turn sends its own statement', async () => {
    const { sent, one, many } = gatedStatements();
    const batch = new TurnBatch(one, many);
    void batch.load('a');
    await nextTurn();
    void batch.load('b');
    await nextTurn();
    expect(sent).toEqual([['a'], ['b']]);
  });

  it('a statement that never answers holds the next keys back for STALL_MS only', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { sent, gates, one, many } = gatedStatements();
    const batch = new TurnBatch(one, many, { maxInFlight: 1 });
    void batch.load('hung');
    await nextTurn();
    const later = batch.load('b');
    await nextTurn();
    expect(sent).toEqual([['hung']]);
    vi.advanceTimersByTime(STALL_MS - 1);
    expect(sent).toEqual([['hung']]);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual([['hung'], ['b']]);
    gates[1]!();
    expect(await later).toBe('value of b');
    // The hung statement answering late does not free a second slot: the next key goes alone, once.
    gates[0]!();
    await nextTurn();
    const next = batch.load('c');
    await nextTurn();
    expect(sent).toEqual([['hung'], ['b'], ['c']]);
    gates[2]!();
    expect(await next).toBe('value of c');
  });
});

/** A fire-and-forget batch that failed anyway must not leave its keys waiting forever (nor reject unhandled). */
describe('TurnBatch with a statement that throws instead of rejecting', () => {
  const boom = () => {
    throw new Error('boom');
  };

  it('a lone key gets the error, and the in-flight slot is freed for the next key', async () => {
    const { sent, gates, one, many } = gatedStatements();
    let broken = true;
    const batch = new TurnBatch((key: string) => (broken ? boom() : one(key)), many, { maxInFlight: 1 });
    await expect(batch.load('a')).rejects.toThrow('boom');
    broken = false;
    const next = batch.load('b');
    await nextTurn();
    expect(sent).toEqual([['b']]);
    gates[0]!();
    expect(await next).toBe('value of b');
  });

  it('every key of a batch retried one by one gets the error', async () => {
    const batch = new TurnBatch<string, string>(boom, () => Promise.reject(new Error('batch failed')), { alone: () => true });
    const settled = await Promise.allSettled([batch.load('a'), batch.load('b')]);
    expect(settled.map((s) => (s.status === 'rejected' ? (s.reason as Error).message : 'answered'))).toEqual(['boom', 'boom']);
  });
});
