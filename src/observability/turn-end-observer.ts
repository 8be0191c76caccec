import { atTurnEnd } from '../common/turn-end.js';
import type { ExchangeEvent, ExchangeObserver } from './exchange-event.js';

/** An observer whose events are held to the end of the event loop's turn; `flush()` delivers them now. */
export interface TurnEndObserver {
  readonly observe: ExchangeObserver;
  /** Delivers the events still held, at once (before a log is flushed, on exit). */
  readonly flush: () => void;
}

/**
 * Passes `observer` each turn's events together, in order, at the end of the turn in which they
 * came (`atTurnEnd`, as the Node adapter's `writeAtTurnEnd` writes that turn's responses). Why:
 * `tokenvault serve` formatting its access line (pino) from within each request, on caches the
 * request has filled with its own work, cost several times more than formatting a turn's
 * lines one after another, whose code and data stay in the CPU's caches (docs/performance.md,
 * Logging). The events are the handler's own objects, made for each call
 * and not changed after it, so holding them is safe. An observer that throws loses that one event.
 */
export function observeAtTurnEnd(observer: ExchangeObserver): TurnEndObserver {
  let held: ExchangeEvent[] = [];
  const flush = (): void => {
    // Taken first: events observed while these are delivered wait for the next flush.
    const events = held;
    held = [];
    for (const event of events) {
      try {
        observer(event);
      } catch {
        // As in the handler: an observer's failure changes nothing else.
      }
    }
  };
  return {
    observe(event) {
      if (held.push(event) === 1) atTurnEnd(flush);
    },
    flush,
  };
}
