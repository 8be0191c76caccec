/**
 * Structured logging, injected (docs/logging.md). Fields are ids, counts and codes: never token
 * data, keys or secrets.
 */
import type { Logger as PinoLogger } from 'pino';

/** The vault's logger: a message, then fields (a pino logger is accepted too: `toLogger`). */
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

/**
 * The default of `createVault` and `createFetchHandler`: warnings and errors as JSON lines on
 * stderr, so a 500's "it has been logged" holds without configuration; `info` entries are dropped.
 */
export const stderrLogger: Logger = Object.freeze({
  info() {},
  warn: consoleLogger.warn,
  error: consoleLogger.error,
});

function write(level: string, message: string, fields?: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), message, ...fields })}\n`);
}

/** The vault's Logger on a pino logger (fields first, as pino takes them), sharing its stream. */
export function pinoVaultLogger(logger: PinoLogger): Logger {
  return {
    info: (message, fields) => logger.info(fields ?? {}, message),
    warn: (message, fields) => logger.warn(fields ?? {}, message),
    error: (message, fields) => logger.error(fields ?? {}, message),
  };
}

/**
 * A `logger` option as the vault uses it: a Logger as given, a pino logger (recognized by its
 * `child` and `levels`) adapted so its fields are not lost to pino's message interpolation.
 */
export function toLogger(value: Logger | PinoLogger | undefined, fallback: Logger = stderrLogger): Logger {
  if (value === undefined) return fallback;
  return isPino(value) ? pinoVaultLogger(value) : value;
}

export function isLoggerLike(value: unknown): value is Logger {
  if (typeof value !== 'object' || value === null) return false;
  const l = value as Record<string, unknown>;
  return typeof l.info === 'function' && typeof l.warn === 'function' && typeof l.error === 'function';
}

function isPino(value: object): value is PinoLogger {
  const l = value as Record<string, unknown>;
  return typeof l.child === 'function' && typeof l.levels === 'object' && l.levels !== null && typeof l.bindings === 'function';
}

/**
 * What is logged of an unexpected error (docs/logging.md): its name, message and stack frames. A
 * message may quote what the failing code was given (V8 quotes the text a JSON parse failed on, a
 * driver the value it refused), so quoted text and runs of six or more digits are cut from it: the
 * frames say where it failed. The stack is logged without its first line (the message again).
 */
export function unexpectedErrorFields(error: unknown): { error: string; error_message?: string; stack?: string } {
  if (!(error instanceof Error)) return { error: typeof error };
  const message = String(error.message)
    .replace(/"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`[^`]*`?/g, (quoted) => `${quoted[0]}…${quoted[0]}`)
    .replace(/\d{6,}/g, '…');
  const frames = (error.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line));
  return { error: error.name, error_message: message.slice(0, 2000), ...(frames.length > 0 ? { stack: frames.join('\n') } : {}) };
}
