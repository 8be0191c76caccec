/** The source of time. Nothing in the core calls Date.now() directly; tests inject a ManualClock. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = Object.freeze({ now: () => Date.now() });

/**
 * A clock that only moves when told to.
 * @example const clock = new ManualClock('2030-01-01T00:00:00Z'); clock.advance(60_000);
 */
export class ManualClock implements Clock {
  #now: number;
  constructor(start: number | string | Date = Date.UTC(2030, 0, 1)) {
    this.#now = typeof start === 'number' ? start : new Date(start).getTime();
  }
  now(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  set(time: number | string | Date): void {
    this.#now = typeof time === 'number' ? time : new Date(time).getTime();
  }
}
