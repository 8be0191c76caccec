/** Attempts per delivery round (the first one included). */
export const MAX_ATTEMPTS = 10;
/** A receiver answering slower than this counts as a failure. */
export const DELIVERY_TIMEOUT_MS = 10_000;
const BASE_DELAY_MS = 20_000;
const MAX_DELAY_MS = 60 * 60 * 1000;
/** Each delay is drawn within ±JITTER of its nominal value, so receivers that failed together are not retried together. */
export const JITTER = 0.2;

/**
 * The nominal wait after failed attempt `attempt` (1-based): 20 s doubling, at most 1 hour:
 * 20 s, 40 s, 80 s, 160 s, 320 s, 640 s, 1280 s, 2560 s, 3600 s; the tenth attempt comes about
 * 2.4 hours after the first.
 */
export function nominalDelayMs(attempt: number): number {
  return Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (attempt - 1));
}

/** The wait after failed attempt `attempt`, with jitter (`random` in [0, 1)). */
export function retryDelayMs(attempt: number, random: () => number = Math.random): number {
  return Math.round(nominalDelayMs(attempt) * (1 - JITTER + 2 * JITTER * random()));
}
