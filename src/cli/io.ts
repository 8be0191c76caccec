/** What every CLI command shares: where it reads and writes, its two error kinds, flag parsing. */
import type { LogSink } from './log-sink.js';

/** Where the CLI reads and writes: injectable so it can be run in-process by tests. */
export interface CliIo {
  env: Readonly<Record<string, string | undefined>>;
  stdout(text: string): void;
  stderr(text: string): void;
  /**
   * Where the JSON log lines (access log, vault entries) go. The `tokenvault` command passes an
   * asynchronous buffered sink on stderr's descriptor; without one, each line goes through `stderr`.
   */
  log?: LogSink;
  /** `serve` stops (draining requests, closing the store) when this aborts. */
  signal?: AbortSignal;
  /** `serve` checks its options (`tokenvault config check`) and returns 0 before opening anything. */
  checkOnly?: boolean;
  /** Receives the running server's URL once it listens. */
  onListening?(url: string): void;
}

/** A bad invocation: printed with a hint to `--help`, exit code 2. */
export class UsageError extends Error {}
/** A failure the user can act on (bad environment, missing key file): printed as is, exit code 1. */
export class CliError extends Error {}

/** Runs parseArgs, turning its errors (unknown flag, missing value…) into usage errors. */
export function parse<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
}

/** A flag holding a whole number within [min, max]. */
export function integerFlag(name: string, value: string | undefined, min: number, max: number): number {
  if (value === undefined || !/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}`);
  }
  return Number(value);
}
