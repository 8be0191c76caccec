import type { Logger } from '../common/logger.js';

/**
 * What the vault does with a reactor's console output (option `reactors.consoleOutput`):
 * - `summary` (default): the output is discarded; only its line count, size in bytes and whether it
 *   was cut are logged. Reactor code sees detokenized data, and whatever it prints could be a card
 *   number: no detection of derived values (slices, reversals, encodings) is complete, so by
 *   default none of it reaches the process log.
 * - `redacted`: the lines are logged too, with every value the run was handed from a token replaced
 *   by `[REDACTED]` (see SensitiveValues). Best effort: a value the code transformed is not found.
 */
export type ConsoleOutputMode = 'summary' | 'redacted';

export const CONSOLE_OUTPUT_MODES: readonly ConsoleOutputMode[] = ['summary', 'redacted'];

export const REDACTED = '[REDACTED]';

/** Shortest string or number leaf redacted; shorter ones (a month, a flag) are not secrets alone. */
const MIN_SECRET_LENGTH = 4;
/** Keys whose values are redacted at any length: a card's cvc is 3 or 4 digits. */
const ALWAYS_SECRET_KEYS = new Set(['cvc']);

/**
 * The values a reactor run was handed from tokens: the detokenized tokens' data, and what `req.bt`
 * returned to it. Each string or number leaf of 4 or more characters, and every `cvc` value, is a
 * secret; `redact` replaces each occurrence (and its JSON-escaped form) in a log line.
 */
export class SensitiveValues {
  readonly #secrets = new Set<string>();

  /** Adds every leaf of token data. */
  addTokenData(data: unknown): void {
    this.#walk(data, null, 0);
  }

  /**
   * Adds what a `req.bt` call returned: the `data` of every token view in it (an object with `id`
   * and `data`); the whole value for a nested reactor's response, which may carry anything.
   */
  addBtResult(method: string, value: unknown): void {
    if (method === 'reactors.react') this.addTokenData(value);
    else this.#tokenViews(value, 0);
  }

  get size(): number {
    return this.#secrets.size;
  }

  /**
   * Redacts one line. When `cutShort`, the line was cut at the output limit and may end in the
   * beginning of a secret: that tail is redacted too.
   */
  redact(line: string, cutShort = false): string {
    let out = line;
    // Longest first, so a secret containing another is replaced whole.
    const secrets = [...this.#secrets].sort((a, b) => b.length - a.length);
    for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    if (cutShort) {
      for (const secret of secrets) {
        for (let k = secret.length - 1; k >= Math.min(MIN_SECRET_LENGTH, secret.length); k--) {
          if (out.endsWith(secret.slice(0, k))) return out.slice(0, out.length - k) + REDACTED;
        }
      }
    }
    return out;
  }

  #add(text: string): void {
    if (text === '') return;
    this.#secrets.add(text);
    const escaped = JSON.stringify(text).slice(1, -1);
    if (escaped !== text) this.#secrets.add(escaped);
  }

  #walk(value: unknown, key: string | null, depth: number): void {
    if (depth > 64) return;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint') {
      const text = String(value);
      if (text.length >= MIN_SECRET_LENGTH || (key !== null && ALWAYS_SECRET_KEYS.has(key.toLowerCase()))) this.#add(text);
    } else if (Array.isArray(value)) {
      for (const item of value) this.#walk(item, key, depth + 1);
    } else if (typeof value === 'object' && value !== null) {
      for (const [k, v] of Object.entries(value)) this.#walk(v, k, depth + 1);
    }
  }

  #tokenViews(value: unknown, depth: number): void {
    if (depth > 64 || typeof value !== 'object' || value === null) return;
    if (Array.isArray(value)) {
      for (const item of value) this.#tokenViews(item, depth + 1);
      return;
    }
    const record = value as Record<string, unknown>;
    if ('id' in record && 'data' in record) this.addTokenData(record.data);
    for (const [k, v] of Object.entries(record)) if (k !== 'data' || !('id' in record)) this.#tokenViews(v, depth + 1);
  }
}

/** Reports a run's console output as `mode` says; never throws (logging must not change a run's outcome). */
export function logConsoleOutput(
  logger: Logger,
  mode: ConsoleOutputMode,
  fields: { tenantId: string; reactorId: string },
  lines: readonly string[],
  truncated: boolean,
  sensitive: SensitiveValues,
): void {
  const bytes = lines.reduce((sum, line) => sum + Buffer.byteLength(line), 0);
  const summary = { ...fields, mode, lineCount: lines.length, bytes, truncated };
  if (mode === 'summary') {
    logger.info('reactor console output', summary);
    return;
  }
  const redacted = lines.map((line, i) => sensitive.redact(line, truncated && i === lines.length - 1));
  logger.info('reactor console output', { ...summary, lines: redacted });
}
