/**
 * Delay before retrying a job whose attempt number `attempts` (1 = the first) threw: exponential
 * from 1 s, at most `capMs` (default 1 hour), with jitter (between half and all of it) so that
 * jobs failing together do not retry together.
 */
export function retryDelayMs(attempts: number, random: () => number = Math.random, capMs = 3_600_000): number {
  const full = Math.min(capMs, 1000 * 2 ** Math.max(0, attempts - 1));
  return Math.round(full * (0.5 + random() / 2));
}
