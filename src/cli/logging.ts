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
  return pino({ base: null, timestamp: pino.stdTimeFunctions.isoTime }, io.log ?? directLogSink(io.stderr));
}
