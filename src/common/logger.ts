/**
 * Structured logging, injected. Fields are ids, counts and codes: never token data, keys or secrets.
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = Object.freeze({ info() {}, warn() {}, error() {} });

/** One JSON line per entry on stderr (what the CLI uses). */
export const consoleLogger: Logger = Object.freeze({
  info: (message: string, fields?: Record<string, unknown>) => write('info', message, fields),
  warn: (message: string, fields?: Record<string, unknown>) => write('warn', message, fields),
  error: (message: string, fields?: Record<string, unknown>) => write('error', message, fields),
});

function write(level: string, message: string, fields?: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), message, ...fields })}\n`);
}
