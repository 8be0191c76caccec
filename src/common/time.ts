/** Time as the API shows it. */

/**
 * Formats epoch milliseconds as ISO 8601 with an explicit `+00:00` offset (the README documents "an
 * offset"; one fixed form keeps responses byte-stable).
 * @example formatIso(Date.UTC(2030, 0, 1)) // '2030-01-01T00:00:00.000+00:00'
 */
export function formatIso(ms: number): string {
  // Bursts of writes share a millisecond: remembering the last answer skips most Date work.
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = `${new Date(ms).toISOString().slice(0, -1)}+00:00`;
  }
  return lastIso;
}
let lastMs = Number.NaN;
let lastIso = '';
