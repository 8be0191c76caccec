/** The CLI's structured logger: pino, one JSON line per entry on stderr (stdout stays for people). */
import { pino, type Logger as PinoLogger } from 'pino';
import type { CliIo } from './io.js';
import { directLogSink } from './log-sink.js';

/**
 * A pino logger writing to the CLI's log sink (asynchronous and buffered under `tokenvault`, see
 * ./log-sink.ts), else to its stderr. Entries carry ids, counts, codes and durations, never token
 * data, keys or request bodies (what the vault and the access log put in them).
 */
export function cliLogger(io: CliIo): PinoLogger {
  return pino({ base: null, timestamp: isoTimeByMillisecond() }, io.log ?? directLogSink(io.stderr));
}

/**
 * pino's `isoTime` (`,"time":"2026-01-01T00:00:00.000Z"`), formatted once per millisecond: a busy
 * server logs many lines within one, and formatting the date was a tenth of an access line's cost
 * (docs/performance.md, Logging). The text is made again whenever the millisecond changes.
 */
export function isoTimeByMillisecond(): () => string {
  let millisecond = Number.NaN;
  let text = '';
  return () => {
    const now = Date.now();
    if (now !== millisecond) {
      millisecond = now;
      text = `,"time":"${new Date(now).toISOString()}"`;
    }
    return text;
  };
}
