import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ExchangeEvent } from '../../src/observability/exchange-event.js';
import { observeAtTurnEnd } from '../../src/observability/turn-end-observer.js';

const event = (status: number): ExchangeEvent => ({ method: 'GET', route: '/tokens/{id}', status, durationMs: 1, applicationId: null });
const turnEnd = () => new Promise((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe('observeAtTurnEnd', () => {
  it("holds a turn's events and passes them on together, in order, at the end of that turn", async () => {
    const seen: number[] = [];
    const held = observeAtTurnEnd((e) => seen.push(e.status));
    held.observe(event(200));
    held.observe(event(201));
    await Promise.resolve();
    // Microtasks are still this turn.
    expect(seen).toEqual([]);
    await turnEnd();
    expect(seen).toEqual([200, 201]);
    held.observe(event(404));
    await turnEnd();
    expect(seen).toEqual([200, 201, 404]);
  });

  it('flush() passes the held events on at once, and the turn end then has nothing more to pass', async () => {
    const seen: number[] = [];
    const held = observeAtTurnEnd((e) => seen.push(e.status));
    held.observe(event(200));
    held.observe(event(500));
    held.flush();
    expect(seen).toEqual([200, 500]);
    await turnEnd();
    expect(seen).toEqual([200, 500]);
  });

  it('an event the observer throws on is lost alone: the rest of the turn still reaches it', async () => {
    const seen: number[] = [];
    const held = observeAtTurnEnd((e) => {
      if (e.status === 500) throw new Error('observer failed');
      seen.push(e.status);
    });
    for (const status of [200, 500, 201]) held.observe(event(status));
    await turnEnd();
    expect(seen).toEqual([200, 201]);
  });

  it("a test's fake timers do not hold the events back", async () => {
    const seen: number[] = [];
    const held = observeAtTurnEnd((e) => seen.push(e.status));
    vi.useFakeTimers();
    held.observe(event(200));
    vi.useRealTimers();
    await turnEnd();
    expect(seen).toEqual([200]);
  });
});
